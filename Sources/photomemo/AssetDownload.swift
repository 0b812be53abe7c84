import Foundation
import Glibc
import PhotomemoCore

/// Receives an `asset` stream (chunk lines, then `asset_end`) into a temp file beside
/// `path`, checks the byte count (and the SHA-256 when the daemon sent one), and only
/// then renames it into place: FILE is either the whole asset or untouched.
final class AssetDownload {
    let path: String
    let expectedBytes: Int64
    let sha256: String?
    private let temp: String
    private var fd: Int32
    private var hash: SHA256? = SHA256()  // noncopyable: taken once, to finalize
    private(set) var written: Int64 = 0
    private var committed = false

    init(into path: String, expectedBytes: Int64, sha256: String?) throws {
        self.path = path
        self.expectedBytes = expectedBytes
        self.sha256 = sha256
        let dir = (path as NSString).deletingLastPathComponent
        temp = (dir.isEmpty ? "." : dir) + "/." + (path as NSString).lastPathComponent + ".part-\(getpid())"
        fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw PhotomemoError(.io, "cannot write \(temp): \(String(cString: strerror(errno)))") }
    }

    deinit {
        if fd >= 0 { close(fd) }
        if !committed { unlink(temp) }
    }

    func receive(from client: ControlClient, id: Int64) throws {
        var seq: Int64 = 0
        while true {
            let event = try client.nextEvent(for: id)
            switch event["event"]?.stringValue {
            case "asset_chunk":
                guard event["seq"]?.intValue == seq, let b64 = event["data"]?.stringValue, let data = Data(base64Encoded: b64) else {
                    throw PhotomemoError(.io, "asset chunk \(seq) is missing or damaged")
                }
                try append(data)
                seq += 1
            case "asset_end":
                try finish(announced: event["bytes"]?.intValue ?? -1)
                return
            case "asset_error":
                throw PhotomemoError(PhotomemoError.Code(rawValue: event["error"]?["code"]?.stringValue ?? "io"),
                                     event["error"]?["message"]?.stringValue ?? "the daemon could not send the asset")
            default:
                continue
            }
        }
    }

    private func append(_ data: Data) throws {
        hash!.update(data)
        try data.withUnsafeBytes { raw in
            var off = 0
            while off < raw.count {
                let n = write(fd, raw.baseAddress! + off, raw.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw PhotomemoError(.io, "cannot write \(temp): \(String(cString: strerror(errno)))")
                }
                off += n
            }
        }
        written += Int64(data.count)
    }

    private func finish(announced: Int64) throws {
        guard written == expectedBytes, written == announced else {
            throw PhotomemoError(.io, "received \(written) bytes, the daemon announced \(expectedBytes)")
        }
        let actual = hash.take()!.finalizeHex()
        if let sha256, actual != sha256 {
            throw PhotomemoError(.io, "received bytes with sha256 \(actual), the record says \(sha256)")
        }
        guard fsync(fd) == 0, close(fd) == 0 else {
            throw PhotomemoError(.io, "cannot write \(temp): \(String(cString: strerror(errno)))")
        }
        fd = -1
        guard rename(temp, path) == 0 else { throw PhotomemoError(.io, "cannot rename to \(path): \(String(cString: strerror(errno)))") }
        committed = true
    }
}
