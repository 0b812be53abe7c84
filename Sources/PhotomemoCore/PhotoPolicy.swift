import Foundation
import StageKit

/// Where a job's `photo` may point: a path relative to the inbox (`DCIM/2026/IMG_1.jpg`),
/// or an absolute path under one of the roots allowed with `--allow-root`. Everything else
/// (`..`, empty or `.` components, other absolute paths) is rejected before any file is
/// touched; symlinks are checked again when the file is opened.
public struct PhotoPolicy: Sendable {
    public let inbox: String
    public let allowedRoots: [String]
    /// A folder only the daemon writes (`HOME/reprocess`): its files are the daemon's own
    /// copies of stored originals (`photomemo reprocess`), opened beneath it as anyone's.
    public let daemonsOwn: String?

    public init(inbox: String, allowedRoots: [String], daemonsOwn: String? = nil) {
        self.inbox = inbox
        self.daemonsOwn = daemonsOwn
        // Each root as given and with its links resolved (the admin's own setting): a
        // photo path is matched lexically against both, never resolved itself before.
        self.allowedRoots = Array(Set(allowedRoots.flatMap { [Self.lexical($0), ($0 as NSString).standardizingPath] })).sorted()
    }

    /// `path` without empty or "." components, resolving nothing.
    static func lexical(_ path: String) -> String {
        "/" + path.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
    }

    public enum Resolved: Sendable, Equatable {
        /// A photo's name in the inbox: its path relative to it.
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
        try Self.checkInboxName(photo)
        return .inbox(name: photo)
    }

    /// Refuses what can be no inbox photo's name: a path relative to the inbox whose
    /// components are non-empty, not "." or "..", at most NAME_MAX bytes, with no NUL, and
    /// at most PATH_MAX bytes in all (no such file can ever arrive: a memo naming it would
    /// wait out its join timeout for nothing).
    public static func checkInboxName(_ photo: String) throws {
        let parts = photo.split(separator: "/", omittingEmptySubsequences: false)
        guard !photo.hasPrefix("/"), !photo.contains("\0"), !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw PhotomemoError(.badPath, "photo \"\(photo)\" must be a path in the inbox (no '..', '.' or empty components, no leading '/')")
        }
        if let long = parts.first(where: { $0.utf8.count > Int(NAME_MAX) }) {
            throw PhotomemoError(.badPath, "photo name has a component of \(long.utf8.count) bytes, longer than a file name can be (\(NAME_MAX))")
        }
        guard photo.utf8.count < Int(PATH_MAX) else {
            throw PhotomemoError(.badPath, "photo name is \(photo.utf8.count) bytes, longer than a path can be (\(PATH_MAX))")
        }
    }

    /// Endings that transfer and sync tools give a file while they write it, renaming it
    /// when done: `.part` (many), `.partial` (rclone 1.63+), `.filepart` (WinSCP),
    /// `.crdownload` and `.download` (browsers), `.!sync` (Resilio), `.tmp` (many,
    /// Syncthing's `~syncthing~NAME.tmp` among them). Any case.
    public static let transferEndings = [".part", ".partial", ".filepart", ".crdownload", ".download", ".tmp", ".!sync"]

    /// Whether an inbox file name is one a tool is still writing, by convention: a name
    /// starting with `.` (rsync's `.NAME.XXXXXX`, Syncthing's `.syncthing.NAME.tmp`) or
    /// `~$` (Office's lock files), or ending in one of `transferEndings`. Never taken.
    /// A photo's relative name (`DCIM/.sync/x.jpg`) is judged by its last component, and is
    /// ignored too when a folder on its way is a tool's (`isToolStateFolder`).
    public static func isIgnoredInboxName(_ name: String) -> Bool {
        let parts = name.split(separator: "/")
        if parts.dropLast().contains(where: { isToolStateFolder($0) }) { return true }
        let base = parts.last ?? Substring(name)
        if base.hasPrefix(".") || base.hasPrefix("~$") { return true }
        let lower = base.lowercased()
        return transferEndings.contains { lower.hasSuffix($0) }
    }

    /// `isIgnoredInboxName`, or a match of one of the definition's `inbox.ignore` globs
    /// (fnmatch, no flags) against the base name or the whole relative name.
    public static func isIgnoredInboxName(_ name: String, globs: [String]) -> Bool {
        if isIgnoredInboxName(name) { return true }
        guard !globs.isEmpty else { return false }
        let base = name.split(separator: "/").last.map(String.init) ?? name
        return globs.contains { fnmatch($0, base, 0) == 0 || fnmatch($0, name, 0) == 0 }
    }

    /// Folders sync tools and NAS systems keep their state in, never looked into: any name
    /// starting with `.` or `@` (`.stfolder`, `.stversions`, Synology's `@eaDir`),
    /// `#recycle`, `lost+found`.
    public static func isToolStateFolder(_ name: some StringProtocol) -> Bool {
        name.hasPrefix(".") || name.hasPrefix("@") || name == "#recycle" || name == "lost+found"
    }

    /// A relative inbox name as one file name (a quarantine entry, a file in `done/`): a
    /// flat name is itself; in a nested one `%` becomes `%25` and `/` `%2F`, so no folder is
    /// made and `a/b.jpg` is never `a_b.jpg`'s. One over 180 bytes (top-level or not) keeps
    /// its first 140 and its last 20 around a hash of the whole, so two long names never meet
    /// and what is added to it (`~jobN~K`, `.reason.json`, a temp file's `.PID.RAND.tmp`)
    /// stays within a file name's 255 bytes: a 244-byte name could not be quarantined.
    public static func flatName(_ name: String) -> String {
        let flat = name.contains("/") ? name.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "/", with: "%2F") : name
        guard flat.utf8.count > 180 else { return flat }
        // Cut between characters, never inside one.
        var head = "", tail = ""
        for c in flat.unicodeScalars { if head.utf8.count + String(c).utf8.count > 140 { break }; head.unicodeScalars.append(c) }
        for c in flat.unicodeScalars.reversed() { if tail.utf8.count + String(c).utf8.count > 20 { break }; tail.unicodeScalars.insert(c, at: tail.unicodeScalars.startIndex) }
        return head + "~" + String(SHA256.hex(Data(name.utf8)).prefix(16)) + "~" + tail
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
    /// the inbox for an inbox file (at any depth), else the longest allowed root holding it; nil when
    /// none does (an --allow-root dropped since the job was taken).
    public func root(of path: String) -> String? {
        if path.hasPrefix(inbox + "/") { return inbox }
        if let daemonsOwn, path.hasPrefix(daemonsOwn + "/") { return daemonsOwn }
        return allowedRoots.filter { path.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }.max { $0.count < $1.count }
    }
}
