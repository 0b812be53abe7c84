import ControlProtocol
import Foundation
import Index
import PhotomemoCore
import StageKit
import Testing
@testable import Runtime

/// Every control command × {admin, the owner of what it names, another user} → what the
/// policy answers (DESIGN.md, "Who may do what"). Records are then filtered by their ACL
/// in the record store (RecordStoreTests); here "allowed" means the command goes on.
@Suite struct AccessPolicyTests {
    enum Expected: Equatable { case allowed, forbidden, notFound }
    enum Who: CaseIterable { case admin, owner, other }

    /// The uid of a user who is no admin, and another.
    static let owner = Caller(uid: 60_001), other = Caller(uid: 60_002)

    static func caller(_ who: Who) -> Caller {
        switch who {
        case .admin: Caller(uid: 0)
        case .owner: owner
        case .other: other
        }
    }

    /// The request each command is tried with; `job` commands name a job of `owner`'s.
    static func request(_ cmd: ControlCommand, as caller: Caller) -> [String: JSONValue] {
        switch cmd {
        case .enqueue: ["job": ["memo": "m", "owner": .string(owner.name)]]
        case .subscribe: ["type": "Memo", "exec": ["/bin/true"]]
        default: [:]
        }
    }

    static let table: [ControlCommand: [Who: Expected]] = {
        var t: [ControlCommand: [Who: Expected]] = [:]
        for cmd: ControlCommand in [.status, .metrics, .hosts, .inbox, .jobs, .watch, .query, .get, .update, .delete, .asset, .changes,
                                    .unsubscribe, .subscriptions] {
            t[cmd] = [.admin: .allowed, .owner: .allowed, .other: .allowed]
        }
        for cmd: ControlCommand in [.job, .retry, .cancel] { t[cmd] = [.admin: .allowed, .owner: .allowed, .other: .notFound] }
        for cmd: ControlCommand in [.pause, .resume, .reload] { t[cmd] = [.admin: .allowed, .owner: .forbidden, .other: .forbidden] }
        // Enqueue naming `owner` as the owner: themself, or someone else.
        t[.enqueue] = [.admin: .allowed, .owner: .allowed, .other: .forbidden]
        // An exec sink runs as the daemon.
        t[.subscribe] = [.admin: .allowed, .owner: .forbidden, .other: .forbidden]
        return t
    }()

    func decide(_ cmd: ControlCommand, _ who: Who) -> Expected {
        let caller = Self.caller(who)
        do {
            try AccessPolicy.check(cmd, Self.request(cmd, as: caller), by: caller)
            if [.job, .retry, .cancel].contains(cmd) { try AccessPolicy.checkJob(7, owner: Self.owner.name, by: caller) }
            return .allowed
        } catch let e as PhotomemoError {
            return e.code == .forbidden ? .forbidden : e.code == .notFound ? .notFound : .allowed
        } catch {
            return .allowed
        }
    }

    @Test func everyCommandHasARuleAndTheTableHolds() {
        #expect(Set(AccessPolicy.rules.keys) == Set(ControlCommand.allCases))
        #expect(Set(Self.table.keys) == Set(ControlCommand.allCases))
        for (cmd, row) in Self.table {
            for who in Who.allCases {
                #expect(decide(cmd, who) == row[who], "\(cmd) by \(who)")
            }
        }
    }

    @Test func scopesFollowTheCaller() {
        #expect(Caller(uid: 0).ownScope == nil && Caller(uid: 0).viewer == .admin)
        #expect(Caller(uid: getuid()).isAdmin)
        #expect(Self.owner.ownScope == Self.owner.name && Self.owner.viewer == .user(Self.owner.name))
        // A user's own name as owner is no escalation; an admin's jobs may name anyone.
        #expect(JobKey.scoped("k", owner: Self.owner.name) == "\(Self.owner.name)/k")
        #expect(JobKey.scoped("k", owner: UnixUser.nameOrNumber(0)) == "k")
    }
}
