import Foundation
import Glibc
import Journal
import PhotomemoCore
import StageKit

/// What every way in for memo jobs shares (queue files, socket `enqueue`): where photos
/// may come from and how long a memo waits for its photo.
struct MemoIntake: Sendable {
    let photos: PhotoPolicy
    /// Set from the loop thread on reload (`LiveDefinition`), read on the lane.
    let joinTimeoutSeconds: LockedValue<Int>
    /// The definition's `memoStage` (`LiveDefinition`, shared with the inbox scanner): a
    /// memo joins its photo's job only while the job is before it.
    let memoStage: LockedValue<Int>
    /// The definition's `max_bytes` (shared with the inbox scanner; set on reload): a
    /// bigger photo is refused unread, not hashed in full to be refused by a stage.
    let maxPhotoBytes: LockedValue<Int64?>
    /// The definition's `inbox` section (shared with the inbox scanner; set on reload): its
    /// `ignore` globs name photos no memo can wait for.
    let inbox: LockedValue<InboxOptions>
    /// Per-user quotas (`"quota"`), nil where none is measured.
    let quota: QuotaMeter?

    /// A user (not an admin) has at most this many jobs queued, running or waiting: the
    /// rest of their queue files waits unread until some finish, and `enqueue` answers
    /// `too_many_jobs`. Jobs run oldest first, so one user's flood (a 4 MiB file of `{}`
    /// lines is 1.4 million jobs) is never more than this ahead of anyone else's photo.
    static let maxUnfinishedPerUser = 1000

    /// How many more jobs `owner` may have now; unlimited for an admin. Reprocess jobs have
    /// a cap of their own (`reprocess`), so an admin's reprocess of every record never holds
    /// a user's fresh photos and lines back.
    static func room(for owner: String, uid: UInt32, in journal: any JobIntake, reprocess: Bool = false) throws -> Int {
        if UnixUser.isAdmin(uid: uid) { return .max }
        return maxUnfinishedPerUser - (try journal.unfinishedJobs(owner: owner, reprocess: reprocess, limit: maxUnfinishedPerUser))
    }

    /// The refusal of a user at the cap (`reprocess`: of reprocess jobs) asking for `action`.
    static func atCap(_ name: String, reprocess: Bool = false, then action: String) -> String {
        "\(name) has \(maxUnfinishedPerUser) unfinished \(reprocess ? "reprocess jobs" : "jobs"), the most a user may have; \(action) again once some have finished"
    }

    /// `too_many_jobs` for a user at the cap who asks the socket for one more (`action`:
    /// "enqueue", "retry", "reprocess"); admins are not capped.
    static func checkRoom(for caller: Caller, in journal: any JobIntake, reprocess: Bool = false, then action: String) throws {
        guard !caller.isAdmin, try room(for: caller.name, uid: caller.uid, in: journal, reprocess: reprocess) <= 0 else { return }
        throw PhotomemoError(.tooManyJobs, atCap(caller.name, reprocess: reprocess, then: action))
    }

    init(photos: PhotoPolicy, joinTimeoutSeconds: Int, memoStage: Int = .max, maxPhotoBytes: Int64? = nil, inbox: InboxOptions = InboxOptions(),
         quota: QuotaMeter? = nil) {
        self.memoStage = LockedValue(memoStage)
        self.photos = photos
        self.inbox = LockedValue(inbox)
        self.quota = quota
        self.joinTimeoutSeconds = LockedValue(joinTimeoutSeconds)
        self.maxPhotoBytes = LockedValue(maxPhotoBytes)
    }

    /// The daemon's: every setting read from the definition in force.
    init(photos: PhotoPolicy, live: LiveDefinition, quota: QuotaMeter?) {
        self.photos = photos
        self.inbox = live.inbox
        self.quota = quota
        self.joinTimeoutSeconds = live.joinTimeoutSeconds
        self.memoStage = live.memoStage
        self.maxPhotoBytes = live.maxPhotoBytes
    }

    /// Why a file of `size` bytes can never get through, if it cannot (the words the stage with that limit uses).
    static func overLimit(size: Int64, _ limit: LockedValue<Int64?>) -> String? {
        guard let max = limit.value, size > max else { return nil }
        return "file is \(size) bytes, over max_bytes (\(max))"
    }

    /// What a job line's `photo` names: an inbox file to join or wait for, or a checked,
    /// hashed file under an --allow-root — which, for a user's job, must be their own file.
    func resolvePhoto(_ photo: String?, owner: String?) throws -> QueuedMemo.Photo {
        guard let photo else { return .none }
        switch try photos.resolve(photo) {
        case .inbox(let name):
            guard !PhotoPolicy.isIgnoredInboxName(name) else {
                throw PhotomemoError(.badPath, "photo \"\(name)\" is a name the inbox ignores (a name a transfer tool writes while the file is in transit: starting with '.' or '~$', or ending in \(PhotoPolicy.transferEndings.joined(separator: ", ")); or in a tool's folder: starting with '.' or '@', #recycle, lost+found)")
            }
            guard !PhotoPolicy.isIgnoredInboxName(name, globs: inbox.value.ignore) else {
                throw PhotomemoError(.badPath, "photo \"\(name)\" is a name the inbox ignores (the job definition's inbox.ignore)")
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
            // Where a link leads is told to an admin only: the daemon resolved it as root.
            guard case .absolute = try? photos.resolve(resolved), let root = photos.root(of: resolved) else {
                if admin { throw PhotomemoError(.badPath, "photo \(path) resolves to \(resolved), outside every --allow-root") }
                throw notYours
            }
            let st = try Files.lstatEntry(resolved)
            guard admin || UnixUser.nameOrNumber(st.st_uid) == owner else { throw notYours }
            guard st.st_mode & S_IFMT == S_IFREG else {
                return .unusable(path: path, reason: "photo \(path) is a \(Files.kind(st)), not a regular file")
            }
            if let why = Self.overLimit(size: Int64(st.st_size), maxPhotoBytes) { return .unusable(path: path, reason: "photo \(path): \(why)") }
            // Hashed as the stages will read it: opened once beneath its root, no link
            // followed, the owner's file, the very inode lstat saw (`PhotoFile`).
            let file = try PhotoFile(resolved, beneath: root, owner: owner, seal: PhotoSeal.identity(st), maxBytes: .max)
            guard let sha = try SHA256.hex(ofOpenFile: file.fd, path: resolved, size: Int64(st.st_size)) else {
                return .unusable(path: path, reason: "photo \(path) changed size while it was hashed; enqueue it again once it is written")
            }
            return .file(path: resolved, sha256: sha)
        }
    }
}
