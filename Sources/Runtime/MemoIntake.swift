import Foundation
import Glibc
import Journal
import PhotomemoCore

/// What every way in for memo jobs shares (queue files, socket `enqueue`): where photos
/// may come from and how long a memo waits for its photo.
struct MemoIntake: Sendable {
    let photos: PhotoPolicy
    /// Set from the loop thread on reload, read on the lane.
    let joinTimeoutSeconds: LockedValue<Int>

    init(photos: PhotoPolicy, joinTimeoutSeconds: Int) {
        self.photos = photos
        self.joinTimeoutSeconds = LockedValue(joinTimeoutSeconds)
    }

    /// What a job line's `photo` names: an inbox file to join or wait for, or a checked,
    /// hashed file under an --allow-root — which, for a user's job, must be their own file.
    func resolvePhoto(_ photo: String?, owner: String?) throws -> QueuedMemo.Photo {
        guard let photo else { return .none }
        switch try photos.resolve(photo) {
        case .inbox(let name):
            guard !PhotoPolicy.isIgnoredInboxName(name) else {
                throw PhotomemoError(.badPath, "photo \"\(name)\" is a name the inbox ignores (starts with '.' or ends in .part/.tmp)")
            }
            return .inbox(name: name)
        case .absolute(let path):
            // The daemon resolves paths as root: for a user, a missing file and another's
            // answer alike, so nothing is learnt of what exists where they cannot look.
            let admin = UnixUser.isAdmin(name: owner)
            let notYours = PhotomemoError(.forbidden, "photo \(path) is not a file of yours (or does not exist); a job may name only its owner's files")
            guard let real = realpath(path, nil) else {
                if admin { return .unusable(path: path, reason: "photo \(path) not found") }
                throw notYours
            }
            let resolved = String(cString: real)
            free(real)
            guard case .absolute = try photos.resolve(resolved) else {
                throw PhotomemoError(.badPath, "photo \(path) resolves to \(resolved), outside every --allow-root")
            }
            let st = try Files.lstatEntry(resolved)
            guard admin || UnixUser.nameOrNumber(st.st_uid) == owner else { throw notYours }
            guard st.st_mode & S_IFMT == S_IFREG else {
                return .unusable(path: path, reason: "photo \(path) is a \(Files.kind(st)), not a regular file")
            }
            return .file(path: resolved, sha256: try SHA256.hexOfRegularFile(atPath: resolved, expected: (UInt64(st.st_dev), UInt64(st.st_ino))).hex)
        }
    }
}
