import ControlProtocol
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
        let temp = temp
        fd = try Self.io { try syscall("open \(temp)", blocking: { open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }) }
    }

    /// System errors as the CLI reports them (`io`, exit 1).
    private static func io<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as SystemError { throw PhotomemoError(.io, e.description) }
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
        try Self.io {
            try data.withUnsafeBytes { raw in
                var off = 0
                while off < raw.count {
                    off += try syscall("write \(temp)", blocking: { write(fd, raw.baseAddress! + off, raw.count - off) })
                }
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
        let (fd, temp, path) = (fd, temp, path)
        try Self.io {
            try syscall("fsync \(temp)", blocking: { fsync(fd) })
            try syscall("close \(temp)", blocking: { close(fd) })
        }
        self.fd = -1
        try Self.io { try syscall("rename \(temp) to \(path)", blocking: { rename(temp, path) }) }
        committed = true
    }
}
