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

    /// Whether an inbox file name is still being written by convention (`.x`, `x.part`, `x.tmp`).
    public static func isIgnoredInboxName(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix(".part") || name.hasSuffix(".tmp")
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
