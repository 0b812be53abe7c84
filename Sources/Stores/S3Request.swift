import CCurl
import Foundation
import PhotomemoCore

/// One blocking libcurl request, signed with SigV4 by curl.
extension S3Store {
    struct Response {
        var status: Int = 0
        var headers: [String: String] = [:]
        var body = Data()
    }

    /// What the C callbacks reach through their userdata pointer.
    private final class Transfer {
        var response = Response()
        var upload: FileHandle?
    }

    func request(_ method: String, _ url: String, query: String = "", headers: [String] = [], body: String? = nil,
                 bodySize: Int64 = 0) throws -> Response {
        guard let curl = curl_easy_init() else { throw StoreFailure(.transient, "curl_easy_init failed") }
        defer { curl_easy_cleanup(curl) }
        let transfer = Transfer()
        let target = query.isEmpty ? url : url + "?" + query
        pm_curl_set_string(curl, CURLOPT_URL, target)
        pm_curl_set_string(curl, CURLOPT_AWS_SIGV4, "aws:amz:\(region):s3")
        pm_curl_set_string(curl, CURLOPT_USERPWD, "\(accessKey):\(secretKey)")
        pm_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
        if ProcessInfo.processInfo.environment["PM_CURL_VERBOSE"] != nil { pm_curl_set_long(curl, CURLOPT_VERBOSE, 1) }
        pm_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000)
        // A stalled transfer (under 1 KB/s for 30 s) is an outage, not a hang.
        pm_curl_set_long(curl, CURLOPT_LOW_SPEED_LIMIT, 1024)
        pm_curl_set_long(curl, CURLOPT_LOW_SPEED_TIME, 30)
        var list: UnsafeMutablePointer<curl_slist>?
        // AWS requires the payload hash header on every request; curl 7.88 does not add it.
        let payloadHash = headers.contains { $0.lowercased().hasPrefix("x-amz-content-sha256:") } ? [] : ["x-amz-content-sha256: \(Self.emptySHA256)"]
        // No "Expect:" header: curl would sign it and then drop it (PLATFORM.md).
        for h in headers + payloadHash + (sessionToken.map { ["x-amz-security-token: \($0)"] } ?? []) {
            list = curl_slist_append(list, h)
        }
        defer { curl_slist_free_all(list) }
        pm_curl_set_slist(curl, CURLOPT_HTTPHEADER, list)
        let box = Unmanaged.passUnretained(transfer).toOpaque()
        pm_curl_set_write(curl, { ptr, size, n, data in
            let t = Unmanaged<Transfer>.fromOpaque(data!).takeUnretainedValue()
            t.response.body.append(UnsafeRawPointer(ptr!).assumingMemoryBound(to: UInt8.self), count: size * n)
            return size * n
        }, box)
        pm_curl_set_header_fn(curl, { ptr, size, n, data in
            let t = Unmanaged<Transfer>.fromOpaque(data!).takeUnretainedValue()
            let line = String(decoding: UnsafeRawBufferPointer(start: ptr, count: size * n), as: UTF8.self)
            if let colon = line.firstIndex(of: ":") {
                t.response.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return size * n
        }, box)
        switch method {
        case "HEAD": pm_curl_set_long(curl, CURLOPT_NOBODY, 1)
        case "PUT":
            guard let path = body, let fh = FileHandle(forReadingAtPath: path) else {
                throw StoreFailure(.permanent, "cannot read \(body ?? "the body")")
            }
            transfer.upload = fh
            pm_curl_set_long(curl, CURLOPT_UPLOAD, 1)
            pm_curl_set_off(curl, CURLOPT_INFILESIZE_LARGE, curl_off_t(bodySize))
            pm_curl_set_read(curl, { ptr, size, n, data in
                let t = Unmanaged<Transfer>.fromOpaque(data!).takeUnretainedValue()
                guard let chunk = try? t.upload?.read(upToCount: size * n), !chunk.isEmpty else { return 0 }
                chunk.copyBytes(to: UnsafeMutableRawPointer(ptr!).assumingMemoryBound(to: UInt8.self), count: chunk.count)
                return chunk.count
            }, box)
        case "GET": break
        default: pm_curl_set_string(curl, CURLOPT_CUSTOMREQUEST, method)
        }
        let rc = curl_easy_perform(curl)
        try? transfer.upload?.close()
        guard rc == CURLE_OK else {
            let text = "\(name): \(method) \(url): \(String(cString: curl_easy_strerror(rc)))"
            switch rc {
            case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_OPERATION_TIMEDOUT, CURLE_SEND_ERROR,
                 CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_SSL_CONNECT_ERROR:
                throw StoreFailure(.unavailable, text)
            default:
                throw StoreFailure(.transient, text)
            }
        }
        transfer.response.status = pm_curl_status(curl)
        return transfer.response
    }
}
