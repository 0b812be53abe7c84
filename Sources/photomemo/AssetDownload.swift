import ControlProtocol
import Foundation
import Glibc
import PhotomemoCore
import StageKit

/// Receives an `asset` stream (chunk lines, then `asset_end`) into a temp file beside
/// `path`, checks the byte count (and the SHA-256 when the daemon sent one), and only
/// then renames it into place: FILE is either the whole asset or untouched. The temp file
/// is made in the folder's descriptor under a random name, O_EXCL (`OpenFolder`), so a run
/// as root never writes through a link someone planted there.
final class AssetDownload {
    let path: String
    let expectedBytes: Int64
    let sha256: String?
    private let folder: OpenFolder
    private let name: String
    private let temp: String
    private var fd: Int32
    private var hash: SHA256? = SHA256()  // noncopyable: taken once, to finalize
    private(set) var written: Int64 = 0
    private var committed = false

    /// `path` (FILE of `asset -o`): its folder is opened without following a link.
    convenience init(into path: String, expectedBytes: Int64, sha256: String?) throws {
        let dir = (path as NSString).deletingLastPathComponent
        let folder = try Self.io { try OpenFolder(dir.isEmpty ? "." : dir) }
        try self.init(into: folder, name: (path as NSString).lastPathComponent, expectedBytes: expectedBytes, sha256: sha256)
    }

    /// The file `name` in `folder` (a gallery's assets/).
    init(into folder: OpenFolder, name: String, expectedBytes: Int64, sha256: String?) throws {
        self.folder = folder
        self.name = name
        path = folder.path + "/" + name
        self.expectedBytes = expectedBytes
        self.sha256 = sha256
        (fd, temp) = try Self.io { try folder.makeTemp(for: name) }
    }

    /// System errors as the CLI reports them (`io`, exit 1).
    private static func io<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as SystemError { throw PhotomemoError(.io, e.description) }
    }

    deinit {
        if fd >= 0 { close(fd) }
        if !committed { try? folder.remove(temp) }
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
        let (fd, temp) = (fd, temp)
        try Self.io { try DurableFile.writeAll(fd, data, path: temp) }
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
        let (fd, temp) = (fd, temp)
        try Self.io {
            try syscall("fsync \(temp)", blocking: { fsync(fd) })
            try syscall("close \(temp)", blocking: { close(fd) })
        }
        self.fd = -1
        try Self.io { try folder.commit(temp, as: name) }
        committed = true
    }
}
