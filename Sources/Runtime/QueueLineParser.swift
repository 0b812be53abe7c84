import Journal
import PhotomemoCore
import StageKit

/// Turns one whole line of a queue file into the job it asks for, as its file's owner's, or
/// into the reason it is quarantined. No I/O of its own beyond resolving the photo.
struct QueueLineParser {
    /// The file relative to the home (its key in derived job keys).
    let name: String
    /// This host's name in a cluster ("" alone): part of derived keys.
    let host: String
    let intake: MemoIntake

    /// Who the lines of the file being read belong to (its fstat owner).
    struct Owner {
        let uid: UInt32
        let name: String
    }

    /// The job `bytes` (one line without its newline) asks for, or the reason it is not one.
    /// Lines belong to the file's owner: an `"owner"` in a line counts only in a file owned
    /// by an admin. `allowance`, the owner's quota this turn, is taken from.
    func parse(_ bytes: ArraySlice<UInt8>, at pos: QueuePosition, owner: Owner,
               allowance: inout QuotaMeter.Allowance?) -> Result<QueuedMemo, Refused> {
        var memo: MemoJob
        let photo: QueuedMemo.Photo
        do {
            memo = try MemoJob.parse(line: Array(bytes))
            if let named = memo.owner, named != owner.name, !UnixUser.isAdmin(uid: owner.uid) {
                Log.warning("\(name) line \(pos.line): \"owner\": \"\(Log.oneLine(named))\" is not honoured in a file of \(owner.name)'s "
                            + "(only an admin's file may name another owner); the job is \(owner.name)'s")
            }
            if memo.owner == nil || !UnixUser.isAdmin(uid: owner.uid) { memo.owner = owner.name }
            photo = try intake.resolvePhoto(memo.photo, owner: memo.owner)
            if let refused = allowance?.take() { throw refused }
        } catch {
            return .failure(Refused(reason: (error as? PhotomemoError)?.message ?? "\(error)"))
        }
        let source = "\(name) line \(pos.line) (byte \(pos.offset))"
        let key = memo.key.map { JobKey.scoped($0, owner: memo.owner) }
            ?? "queue:\(host.isEmpty ? "" : host + "/")\(name):g\(pos.generation):\(pos.offset)"
        return .success(QueuedMemo(memo: memo, photo: photo, key: key, source: source))
    }

    /// Why a line is not a job: it goes to quarantine with this reason.
    struct Refused: Error {
        let reason: String
    }
}
