import ControlProtocol
import Index
import PhotomemoCore
import StageKit

/// A control-socket client as the kernel names it (SO_PEERCRED): never what it says.
struct Caller: Sendable, Equatable {
    let uid: UInt32
    let name: String
    let isAdmin: Bool

    init(uid: UInt32) {
        self.uid = uid
        name = UnixUser.nameOrNumber(uid)
        isAdmin = UnixUser.isAdmin(uid: uid)
    }

    /// What a record's ACL is checked against.
    var viewer: Viewer { isAdmin ? .admin : .user(name) }
    /// Whose jobs and events the caller sees: nil (everyone's) for an admin.
    var ownScope: String? { isAdmin ? nil : name }
}

/// Who may do what over the control socket (DESIGN.md, "Who may do what"): the one place
/// a command is allowed or refused. Admins (root, the daemon's uid) may do everything;
/// a user acts only as themself:
///
/// | rule | commands | a user |
/// | --- | --- | --- |
/// | anyone | status, metrics, hosts, inbox | counts only; `inbox` lists their own files |
/// | ownJobs | jobs, job, watch, retry, cancel | their own jobs; others' are `not_found` |
/// | asThemself | enqueue | as themself; naming another owner is `forbidden` |
/// | admins | pause, resume, reload | `forbidden` |
/// | recordACL | query, get, update, delete, asset, changes | what each record's ACL grants |
/// | ownSubscriptions | subscribe, unsubscribe, subscriptions | theirs; `--exec` sinks are `forbidden` |
enum AccessPolicy {
    enum Rule: Equatable { case anyone, ownJobs, asThemself, admins, recordACL, ownSubscriptions }

    static let rules: [ControlCommand: Rule] = [
        .status: .anyone, .metrics: .anyone, .hosts: .anyone, .inbox: .anyone,
        .jobs: .ownJobs, .job: .ownJobs, .watch: .ownJobs, .retry: .ownJobs, .cancel: .ownJobs,
        .enqueue: .asThemself,
        .pause: .admins, .resume: .admins, .reload: .admins,
        .query: .recordACL, .get: .recordACL, .update: .recordACL, .delete: .recordACL, .asset: .recordACL, .changes: .recordACL,
        .subscribe: .ownSubscriptions, .unsubscribe: .ownSubscriptions, .subscriptions: .ownSubscriptions,
    ]

    /// Refuses what the caller may never do, whatever it is done to. What passes is then
    /// scoped by the caller (`ownScope`, `viewer`) and `checkJob`. A command without a rule
    /// is refused: a new command is not open to everyone by omission.
    static func check(_ cmd: ControlCommand, _ values: [String: JSONValue], by caller: Caller) throws {
        guard let rule = rules[cmd] else {
            throw PhotomemoError(.forbidden, "\(cmd.rawValue) has no access rule")
        }
        guard !caller.isAdmin else { return }
        switch rule {
        case .anyone, .ownJobs, .recordACL: return
        case .admins:
            throw PhotomemoError(.forbidden, "\(cmd.rawValue) is for admins (root and the daemon's user); you are \(caller.name)")
        case .asThemself:
            if let owner = values[ControlArgument.job]?[ControlArgument.owner], owner != .null, owner.stringValue != caller.name {
                throw PhotomemoError(.forbidden, "only admins may enqueue for another owner; your jobs are yours (\(caller.name))")
            }
        case .ownSubscriptions:
            if cmd == .subscribe, let exec = values[ControlArgument.exec], exec != .null {
                throw PhotomemoError(.forbidden, "exec sinks run as the daemon and are for admins; use a webhook or --follow")
            }
        }
    }

    /// A job named by id: `not_found` unless it is the caller's, so a user learns nothing
    /// of others' jobs, not even that they exist.
    static func checkJob(_ id: Int64, owner: String?, by caller: Caller) throws {
        guard caller.isAdmin || owner == caller.name else { throw PhotomemoError(.notFound, "no job \(id)") }
    }
}
