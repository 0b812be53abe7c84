import Foundation
import PhotomemoCore
import StageKit

/// Any S3-compatible store (SeaweedFS, MinIO, Ceph, AWS) over libcurl, which signs with
/// SigV4 itself (`CURLOPT_AWS_SIGV4`). Path-style URLs: `ENDPOINT/BUCKET/PREFIX/KEY`.
/// Every PUT carries `x-amz-content-sha256` (AWS requires it; curl 7.88 does not add it)
/// and `x-amz-checksum-sha256`, so the server verifies the bytes; a HEAD first skips
/// objects already there, except for bytes the caller calls fresh (a job's first attempt:
/// one request an object, not two). Requests block: the upload stage runs them on pool threads.
public struct S3Store: AssetStore {
    public let bucket: String
    public let prefix: String
    public let endpoint: String
    public let region: String
    let accessKey: String
    let secretKey: String
    let sessionToken: String?
    /// Shared by copies of this store.
    public let requests = S3RequestCounter()
    public static let processRequests = S3RequestCounter()

    public var name: String { "s3://\(bucket)" + (prefix.isEmpty ? "" : "/" + prefix) }

    /// `s3://BUCKET[/PREFIX][?endpoint=URL&region=R]`, credentials from the environment.
    public init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let u = URLComponents(string: url), u.scheme == "s3", let host = u.host, !host.isEmpty else {
            throw PhotomemoError(.badDefinition, "store \"\(url)\": expected s3://BUCKET[/PREFIX]?endpoint=URL&region=R")
        }
        bucket = host
        prefix = u.path.split(separator: "/").joined(separator: "/")
        let q = Dictionary((u.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, b in b })
        if let bad = q.keys.sorted().first(where: { $0 != "endpoint" && $0 != "region" }) {
            throw PhotomemoError(.badDefinition, "store \"\(url)\": unknown parameter \"\(bad)\"; valid: endpoint, region")
        }
        region = q["region"] ?? environment["AWS_REGION"] ?? "us-east-1"
        endpoint = (q["endpoint"] ?? "https://s3.\(region).amazonaws.com").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        guard let ak = environment["AWS_ACCESS_KEY_ID"], !ak.isEmpty, let sk = environment["AWS_SECRET_ACCESS_KEY"], !sk.isEmpty else {
            throw PhotomemoError(.badDefinition, "store \(url) needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the daemon's environment")
        }
        accessKey = ak
        secretKey = sk
        sessionToken = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
    }

    func url(_ key: String, query: String = "") -> String {
        let path = ([bucket] + (prefix.isEmpty ? [] : [prefix]) + (key.isEmpty ? [] : [key])).joined(separator: "/")
        return endpoint + "/" + Self.encodePath(path) + (query.isEmpty ? "" : "?" + query)
    }

    /// RFC 3986 unreserved characters stay, `/` stays, everything else is %XX (SigV4 signs the path as written).
    static func encodePath(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += String(format: "%%%02X", b)
            }
        }
        return out
    }

    public func head(key: String) throws -> Int64? {
        let r = try request("HEAD", url(key))
        if r.status == 404 { return nil }
        try check(r, "HEAD \(key)")
        return r.headers["content-length"].flatMap { Int64($0) }
    }

    @discardableResult
    /// The server checks the bytes against `sha256` (`x-amz-checksum-sha256`); an object
    /// is never a link, so `releasing` and `seal` change nothing here.
    public func put(_ source: Int32, name file: String, key: String, sha256: String, contentType: String, metadata: [String: String],
                    fresh: Bool, releasing: Bool, seal: String?) throws -> Bool {
        var st = stat()
        guard fstat(source, &st) == 0 else { throw StoreFailure(.permanent, "cannot read \(file)") }
        let size = Int64(st.st_size)
        if !fresh, let existing = try head(key: key), existing == size { return false }
        var headers = ["x-amz-content-sha256: \(sha256)", "x-amz-checksum-sha256: \(Self.base64(hex: sha256))",
                       "Content-Type: \(contentType)"]
        for (k, v) in metadata.sorted(by: { $0.key < $1.key }) { headers.append("x-amz-meta-\(k): \(v)") }
        let r = try request("PUT", url(key), headers: headers, body: (source, size))
        try check(r, "PUT \(key)")
        return true
    }

    public func get(key: String, to file: String) throws {
        let r = try request("GET", url(key))
        try check(r, "GET \(key)")
        try DurableFile.write(r.body, to: file)
    }

    /// A ranged GET per call: the object is immutable (content-addressed), so chunks of
    /// separate requests fit together.
    public func read(key: String, offset: Int64, count: Int) throws -> [UInt8] {
        guard count > 0 else { return [] }
        let r = try request("GET", url(key), headers: ["Range: bytes=\(offset)-\(offset + Int64(count) - 1)"])
        if r.status == 416 { return [] }  // offset at or past the end
        try check(r, "GET \(key) bytes \(offset)+\(count)")
        // 206 is the range; a server that ignores Range sends the whole object (200).
        let body = r.status == 206 ? r.body : r.body.dropFirst(Int(offset))
        return [UInt8](body.prefix(count))
    }

    public func delete(key: String) throws {
        let r = try request("DELETE", url(key))
        if r.status == 404 { return }
        try check(r, "DELETE \(key)")
    }

    public func list(prefix keyPrefix: String) throws -> [String] {
        var keys: [String] = []
        var token: String?
        let full = (prefix.isEmpty ? "" : prefix + "/") + keyPrefix
        repeat {
            // SigV4 signs the query as written: sorted, percent-encoded.
            var q = [("list-type", "2"), ("prefix", full)]
            if let token { q.append(("continuation-token", token)) }
            let query = q.sorted { $0.0 < $1.0 }.map { "\($0.0)=\(Self.encodeQuery($0.1))" }.joined(separator: "&")
            let r = try request("GET", endpoint + "/" + bucket, query: query)
            try check(r, "LIST \(full)")
            let xml = String(decoding: r.body, as: UTF8.self)
            keys += Self.elements("Key", in: xml).map { prefix.isEmpty ? $0 : String($0.dropFirst(prefix.count + 1)) }
            token = Self.elements("IsTruncated", in: xml).first == "true" ? Self.elements("NextContinuationToken", in: xml).first : nil
        } while token != nil
        return keys
    }

    static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    static func encodeQuery(_ s: String) -> String {
        encodePath(s).replacingOccurrences(of: "/", with: "%2F")
    }

    static func base64(hex: String) -> String {
        var bytes: [UInt8] = []
        var it = hex.makeIterator()
        while let a = it.next(), let b = it.next() { bytes.append(UInt8(String([a, b]), radix: 16) ?? 0) }
        return Data(bytes).base64EncodedString()
    }

    static func elements(_ tag: String, in xml: String) -> [String] {
        var out: [String] = []
        var rest = xml[...]
        while let open = rest.range(of: "<\(tag)>"), let close = rest.range(of: "</\(tag)>", range: open.upperBound..<rest.endIndex) {
            out.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return out
    }

    /// Maps an answer to success or a classified failure: 5xx and 429 are outages,
    /// signature and checksum refusals (400, 403) are permanent with the server's words.
    func check(_ r: Response, _ what: String) throws {
        if (200..<300).contains(r.status) { return }
        let xml = String(decoding: r.body, as: UTF8.self)
        let code = Self.elements("Code", in: xml).first ?? "HTTP \(r.status)"
        var message = Self.elements("Message", in: xml).first.map { ": \($0)" } ?? ""
        if r.body.isEmpty && (r.status == 401 || r.status == 403) {
            message = " (access denied; a HEAD answer carries no detail: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
        }
        let text = "\(name): \(what): \(code)\(message)"
        switch r.status {
        case 429, 500...599: throw StoreFailure(.unavailable, text)
        case 400, 401, 403, 404: throw StoreFailure(.permanent, text)
        default: throw StoreFailure(.transient, text)
        }
    }
}
