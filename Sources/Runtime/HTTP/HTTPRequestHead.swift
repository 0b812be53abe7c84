import Foundation

/// The request line and headers of one HTTP/1.x request, parsed strictly (RFC 9112): the
/// health endpoint answers two GETs and rejects anything it does not fully understand
/// rather than guess (a guess is where request smuggling starts).
struct HTTPRequestHead: Equatable {
    let method: String
    /// The target's path, without a query.
    let path: String
    let version: String
    /// Names lowercased.
    let headers: [(name: String, value: String)]

    static func == (a: Self, b: Self) -> Bool {
        a.method == b.method && a.path == b.path && a.version == b.version && a.headers.map(\.name) == b.headers.map(\.name)
            && a.headers.map(\.value) == b.headers.map(\.value)
    }

    /// Why a request is refused: the status to answer and a line saying why.
    struct Refusal: Error, Equatable {
        let status: Int
        let reason: String
    }

    /// What `bytes` (all received so far) hold: nil while the head is incomplete and
    /// under `maxBytes`; the head; or a refusal (431 past `maxBytes`, else 400). `newFrom`:
    /// where the bytes not yet looked at begin, so a head sent a byte at a time is scanned
    /// once, not once per byte.
    static func parse(_ bytes: [UInt8], maxBytes: Int, newFrom: Int = 0) -> Result<HTTPRequestHead, Refusal>? {
        guard let end = headEnd(bytes, from: newFrom) else {
            if bytes.count > maxBytes { return .failure(Refusal(status: 431, reason: "the request head is over \(maxBytes) bytes")) }
            // A stray LF, or a NUL, is refused at once rather than waited on.
            if let bad = firstBadByte(bytes[...], from: max(0, newFrom - 1)) { return .failure(bad) }
            return nil
        }
        guard end <= maxBytes else { return .failure(Refusal(status: 431, reason: "the request head is over \(maxBytes) bytes")) }
        return Result { try head(bytes[..<end]) }.mapError { $0 as! Refusal }
    }

    /// The index just past the blank line that ends the head.
    private static func headEnd(_ b: [UInt8], from: Int) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in max(3, from)..<b.count where b[i] == 0x0A && b[i - 1] == 0x0D && b[i - 2] == 0x0A && b[i - 3] == 0x0D { return i + 1 }
        return nil
    }

    private static func bad(_ reason: String) -> Refusal { Refusal(status: 400, reason: reason) }

    /// Lines end in CRLF; no control bytes but HTAB inside a line.
    private static func firstBadByte(_ b: ArraySlice<UInt8>, from: Int = 0) -> Refusal? {
        var i = b.startIndex + from
        while i < b.endIndex {
            let c = b[i]
            if c == 0x0A, i == b.startIndex || b[i - 1] != 0x0D { return bad("a line ends in a bare LF, not CRLF") }
            if c == 0x0D, i + 1 < b.endIndex, b[i + 1] != 0x0A { return bad("a bare CR inside a line") }
            if c < 0x20 && c != 0x09 && c != 0x0D && c != 0x0A || c == 0x7F { return bad("a control byte in the request head") }
            i += 1
        }
        return nil
    }

    private static func head(_ b: ArraySlice<UInt8>) throws -> HTTPRequestHead {
        if let refusal = firstBadByte(b) { throw refusal }
        guard let text = String(validating: b, as: UTF8.self) else { throw bad("the request head is not UTF-8") }
        var lines = text.components(separatedBy: "\r\n")
        lines.removeLast(2)  // the head ends in an empty line
        guard !lines.isEmpty else { throw bad("no request line") }
        let parts = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw bad("the request line is not METHOD TARGET VERSION") }
        let (method, target, version) = (String(parts[0]), String(parts[1]), String(parts[2]))
        guard !method.isEmpty, method.utf8.allSatisfy(isTokenByte) else { throw bad("the method is not a token") }
        guard target.hasPrefix("/"), target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw bad("the target is not an absolute path") }
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else { throw bad("the version is not HTTP/1.0 or HTTP/1.1") }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw bad("a header line has no colon") }
            let name = line[..<colon]
            // No space before the colon, no folded (obsolete) continuation lines.
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else { throw bad("a header name is not a token") }
            headers.append((name.lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: [" ", "\t"])))
        }
        let values = { (n: String) in headers.filter { $0.name == n }.map(\.value) }
        if version == "HTTP/1.1", values("host").count != 1 { throw bad("an HTTP/1.1 request needs exactly one Host header") }
        // Nothing here takes a body, and after the answer the connection closes.
        if !values("transfer-encoding").isEmpty { throw bad("a request body (Transfer-Encoding) is not accepted") }
        if values("content-length").contains(where: { $0 != "0" }) { throw bad("a request body (Content-Length) is not accepted") }
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return HTTPRequestHead(method: method, path: String(path), version: version, headers: headers)
    }

    /// tchar (RFC 9110): letters, digits and !#$%&'*+-.^_`|~.
    private static func isTokenByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || "!#$%&'*+-.^_`|~".utf8.contains(c)
    }
}
