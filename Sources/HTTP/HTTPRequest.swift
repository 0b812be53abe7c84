import CCurl
import Foundation

/// One blocking HTTP request through libcurl, for the webhook sink and the S3 store (the
/// only file that talks to libcurl). Run it off the loop.
public struct HTTPRequest {
    public enum Body {
        case none
        case bytes(Data)
        /// An open file streamed from its start, `size` bytes (the caller keeps it open).
        case file(Int32, size: Int64)
    }

    public struct Response: Sendable {
        public var status: Int = 0
        /// Header names lowercased.
        public var headers: [String: String] = [:]
        public var body = Data()
    }

    /// A request that got no HTTP answer: `unreachable` for connection-level trouble (an
    /// outage: refused, timed out, reset), else another transport error.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let unreachable: Bool
        public let description: String
        /// Set when `refuseAddress` refused every address the host had: why.
        public var refused: String? = nil
        /// No answer within the timeout (curl's CURLE_OPERATION_TIMEDOUT, connecting or after).
        public var timedOut = false
    }

    public var method: String
    public var url: String
    public var headers: [String] = []
    public var body: Body = .none
    /// 0: no limit on the whole transfer (a stall is caught by the low-speed limit instead).
    public var timeoutMs = 0
    public var connectTimeoutMs = 5000
    /// SigV4 signing by curl: ("aws:amz:REGION:s3", "ACCESS:SECRET").
    public var awsSigV4: (provider: String, credentials: String)?
    /// Keep at most this many bytes of the response body; the rest is read and dropped.
    public var keepBodyBytes = Int.max
    /// Asked with each address (text: `127.0.0.1`, `::1`) before curl connects to it;
    /// a reason refuses it. Checked on the socket, so a name that resolves differently
    /// later (DNS rebinding) or a spelling the caller did not foresee is still caught.
    public var refuseAddress: (@Sendable (String) -> String?)?

    public init(_ method: String, _ url: String) {
        self.method = method
        self.url = url
    }

    /// What the C callbacks reach through their userdata pointer.
    private final class Transfer {
        var response = Response()
        var upload: FileHandle?
        let keepBodyBytes: Int
        var refuseAddress: (@Sendable (String) -> String?)?
        var refused: String?
        init(keepBodyBytes: Int) { self.keepBodyBytes = keepBodyBytes }
    }

    /// libcurl's process-wide setup, once, before the first handle (it is not thread-safe).
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// The host of `url` as curl parses it (an IPv6 address without its brackets), or nil.
    public static func host(of url: String) -> String? {
        guard let p = pm_curl_url_host(url) else { return nil }
        defer { curl_free(p) }
        let host = String(cString: p)
        return host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    public func perform() throws -> Response {
        _ = Self.globalInit
        guard let curl = curl_easy_init() else { throw Failure(unreachable: false, description: "curl_easy_init failed") }
        defer { curl_easy_cleanup(curl) }
        let transfer = Transfer(keepBodyBytes: keepBodyBytes)
        transfer.refuseAddress = refuseAddress
        pm_curl_set_string(curl, CURLOPT_URL, url)
        pm_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
        if ProcessInfo.processInfo.environment["PM_CURL_VERBOSE"] != nil { pm_curl_set_long(curl, CURLOPT_VERBOSE, 1) }
        pm_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMs)
        if timeoutMs > 0 { pm_curl_set_long(curl, CURLOPT_TIMEOUT_MS, timeoutMs) }
        // A stalled transfer (under 1 KB/s for 30 s) is an outage, not a hang.
        pm_curl_set_long(curl, CURLOPT_LOW_SPEED_LIMIT, 1024)
        pm_curl_set_long(curl, CURLOPT_LOW_SPEED_TIME, 30)
        if let sig = awsSigV4 {
            pm_curl_set_string(curl, CURLOPT_AWS_SIGV4, sig.provider)
            pm_curl_set_string(curl, CURLOPT_USERPWD, sig.credentials)
        }
        var list: UnsafeMutablePointer<curl_slist>?
        for h in headers { list = curl_slist_append(list, h) }
        defer { curl_slist_free_all(list) }
        pm_curl_set_slist(curl, CURLOPT_HTTPHEADER, list)
        let box = Unmanaged.passUnretained(transfer).toOpaque()
        if refuseAddress != nil {
            // Redirects are never followed here, and only http(s) is spoken.
            pm_curl_set_string(curl, CURLOPT_PROTOCOLS_STR, "http,https")
            pm_curl_set_opensocket(curl, { data, _, address in
                let t = Unmanaged<Transfer>.fromOpaque(data!).takeUnretainedValue()
                guard let a = address else { return -1 }
                var text = [CChar](repeating: 0, count: 64)
                guard pm_curl_address_text(a, &text, socklen_t(text.count)) == 0 else {
                    t.refused = "not an IP address"
                    return -1
                }
                if let why = t.refuseAddress?(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) {
                    t.refused = why
                    return -1  // CURL_SOCKET_BAD: curl tries the host's next address, if any
                }
                return socket(a.pointee.family, a.pointee.socktype, a.pointee.protocol)
            }, box)
        }
        pm_curl_set_write(curl, { ptr, size, n, data in
            let t = Unmanaged<Transfer>.fromOpaque(data!).takeUnretainedValue()
            let kept = min(size * n, t.keepBodyBytes - t.response.body.count)
            if kept > 0 { t.response.body.append(UnsafeRawPointer(ptr!).assumingMemoryBound(to: UInt8.self), count: kept) }
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
        case "GET": break
        case "POST": pm_curl_set_long(curl, CURLOPT_POST, 1)
        case "PUT": pm_curl_set_long(curl, CURLOPT_UPLOAD, 1)
        default: pm_curl_set_string(curl, CURLOPT_CUSTOMREQUEST, method)
        }
        let rc: CURLcode
        switch body {
        case .none:
            rc = curl_easy_perform(curl)
        case .bytes(let data):
            pm_curl_set_off(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(data.count))
            rc = data.withUnsafeBytes { raw -> CURLcode in
                pm_curl_set_pointer(curl, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
                return curl_easy_perform(curl)
            }
        case .file(let fd, let size):
            guard lseek(fd, 0, SEEK_SET) == 0 else { throw Failure(unreachable: false, description: "cannot read the file to send") }
            let fh = FileHandle(fileDescriptor: fd, closeOnDealloc: false)
            transfer.upload = fh
            pm_curl_set_off(curl, CURLOPT_INFILESIZE_LARGE, curl_off_t(size))
            pm_curl_set_read(curl, { ptr, size, n, data in
                let t = Unmanaged<Transfer>.fromOpaque(data!).takeUnretainedValue()
                guard let chunk = try? t.upload?.read(upToCount: size * n), !chunk.isEmpty else { return 0 }
                chunk.copyBytes(to: UnsafeMutableRawPointer(ptr!).assumingMemoryBound(to: UInt8.self), count: chunk.count)
                return chunk.count
            }, box)
            rc = curl_easy_perform(curl)
        }
        guard rc == CURLE_OK else {
            if let why = transfer.refused, rc == CURLE_COULDNT_CONNECT {
                throw Failure(unreachable: false, description: "refused to connect: \(why)", refused: why)
            }
            let unreachable = [CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_OPERATION_TIMEDOUT, CURLE_SEND_ERROR,
                               CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_SSL_CONNECT_ERROR].contains(rc)
            throw Failure(unreachable: unreachable, description: String(cString: curl_easy_strerror(rc)), timedOut: rc == CURLE_OPERATION_TIMEDOUT)
        }
        transfer.response.status = pm_curl_status(curl)
        return transfer.response
    }
}
