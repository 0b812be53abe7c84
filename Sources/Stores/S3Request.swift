import Foundation
import HTTP
import StageKit

extension S3Store {
    typealias Response = HTTPRequest.Response

    /// One request to the store, signed with SigV4 by curl.
    func request(_ method: String, _ url: String, query: String = "", headers: [String] = [],
                 body: (fd: Int32, size: Int64)? = nil) throws -> Response {
        var r = HTTPRequest(method, query.isEmpty ? url : url + "?" + query)
        r.awsSigV4 = ("aws:amz:\(region):s3", "\(accessKey):\(secretKey)")
        // AWS requires the payload hash header on every request; curl 7.88 does not add it.
        let payloadHash = headers.contains { $0.lowercased().hasPrefix("x-amz-content-sha256:") } ? [] : ["x-amz-content-sha256: \(Self.emptySHA256)"]
        // No "Expect:" header: curl would sign it and then drop it (PLATFORM.md).
        r.headers = headers + payloadHash + (sessionToken.map { ["x-amz-security-token: \($0)"] } ?? [])
        if let body { r.body = .file(body.fd, size: body.size) }
        requests.count(method)
        do {
            return try r.perform()
        } catch let e as HTTPRequest.Failure {
            throw StoreFailure(e.unreachable ? .unavailable : .transient, "\(name): \(method) \(url): \(e.description)")
        }
    }
}

/// Requests sent by method (attempts, answered or not): per store instance for tests, and
/// for the whole process in `S3Store.processRequests`, which `metrics` reports, so S3
/// requests per photo are measured rather than estimated.
public final class S3RequestCounter: Sendable {
    private let counts = LockedValue<[String: Int]>([:])

    public init() {}

    public var byMethod: [String: Int] { counts.value }

    func count(_ method: String) {
        counts.withLock { $0[method, default: 0] += 1 }
        if self !== S3Store.processRequests { S3Store.processRequests.count(method) }
    }
}
