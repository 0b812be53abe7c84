import Foundation

/// Where a job's `photo` may point: a plain file name inside the inbox, or an absolute
/// path under one of the roots allowed with `--allow-root`. Everything else (`..`,
/// sub-paths, other absolute paths) is rejected before any file is touched; symlinks are
/// checked again when the file is opened.
public struct PhotoPolicy: Sendable {
    public let inbox: String
    public let allowedRoots: [String]

    public init(inbox: String, allowedRoots: [String]) {
        self.inbox = inbox
        // Each root as given and with its links resolved (the admin's own setting): a
        // photo path is matched lexically against both, never resolved itself before.
        self.allowedRoots = Array(Set(allowedRoots.flatMap { [Self.lexical($0), ($0 as NSString).standardizingPath] })).sorted()
    }

    /// `path` without empty or "." components, resolving nothing.
    static func lexical(_ path: String) -> String {
        "/" + path.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
    }

    public enum Resolved: Sendable, Equatable {
        /// A file name in the inbox.
        case inbox(name: String)
        /// An absolute path under an allowed root.
        case absolute(path: String)
    }

    public func resolve(_ photo: String) throws -> Resolved {
        if photo.hasPrefix("/") {
            // Lexically only: standardizingPath would resolve links, as root, before any
            // check (and tell by its answer whether a link's target exists).
            let std = Self.lexical(photo)
            guard !photo.split(separator: "/").contains(".."),
                  allowedRoots.contains(where: { std.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }) else {
                throw PhotomemoError(.badPath, "photo \"\(photo)\" is outside the inbox and every --allow-root")
            }
            return .absolute(path: std)
        }
        guard !photo.contains("/"), photo != ".", photo != "..", !photo.contains("\0") else {
            throw PhotomemoError(.badPath, "photo \"\(photo)\" must be a file name in the inbox (no '/' or '..')")
        }
        // No such file can ever arrive: the memo would wait out its join timeout for nothing.
        guard photo.utf8.count <= Int(NAME_MAX) else {
            throw PhotomemoError(.badPath, "photo name is \(photo.utf8.count) bytes, longer than a file name can be (\(NAME_MAX))")
        }
        return .inbox(name: photo)
    }

    /// Endings that transfer and sync tools give a file while they write it, renaming it
    /// when done: `.part` (many), `.partial` (rclone 1.63+), `.filepart` (WinSCP),
    /// `.crdownload` and `.download` (browsers), `.!sync` (Resilio), `.tmp` (many,
    /// Syncthing's `~syncthing~NAME.tmp` among them). Any case.
    public static let transferEndings = [".part", ".partial", ".filepart", ".crdownload", ".download", ".tmp", ".!sync"]

    /// Whether an inbox file name is one a tool is still writing, by convention: a name
    /// starting with `.` (rsync's `.NAME.XXXXXX`, Syncthing's `.syncthing.NAME.tmp`) or
    /// `~$` (Office's lock files), or ending in one of `transferEndings`. Never taken.
    public static func isIgnoredInboxName(_ name: String) -> Bool {
        if name.hasPrefix(".") || name.hasPrefix("~$") { return true }
        let lower = name.lowercased()
        return transferEndings.contains { lower.hasSuffix($0) }
    }

    /// Extensions of the formats a photo may have (any case).
    public static let photoExtensions: Set<String> = ["jpg", "jpeg", "png", "heic", "heif", "webp", "avif"]

    /// The extension of `name`, lowercased, if it has one (`clip.MOV` → `mov`).
    public static func fileExtension(_ name: String) -> String? {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex, name.index(after: dot) != name.endIndex else { return nil }
        return name[name.index(after: dot)...].lowercased()
    }

    /// Whether the first bytes of a file are an image's: JPEG, PNG, WebP, or an ISO
    /// media file of an image brand (HEIC, HEIF, AVIF). At least 12 bytes are looked at.
    public static func startsLikeAnImage(_ head: [UInt8]) -> Bool {
        if head.starts(with: [0xFF, 0xD8, 0xFF]) || head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return true }
        guard head.count >= 12 else { return false }
        if head.starts(with: Array("RIFF".utf8)) && Array(head[8..<12]) == Array("WEBP".utf8) { return true }
        guard Array(head[4..<8]) == Array("ftyp".utf8) else { return false }
        let brand = String(decoding: head[8..<12], as: UTF8.self)
        return ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1", "avif", "avis"].contains(brand)
    }
}

extension PhotoPolicy {
    /// The folder a stored photo path must be opened beneath (`OpenFolder.openBeneath`):
    /// the inbox for an inbox file, else the longest allowed root holding it; nil when
    /// none does (an --allow-root dropped since the job was taken).
    public func root(of path: String) -> String? {
        if path.hasPrefix(inbox + "/"), !path.dropFirst(inbox.count + 1).contains("/") { return inbox }
        return allowedRoots.filter { path.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }.max { $0.count < $1.count }
    }
}
