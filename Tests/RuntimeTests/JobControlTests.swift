import ControlProtocol
import Foundation
import Journal
import StageKit
import Testing
@testable import Runtime

/// The job commands through the control plane with a real journal: who sees which jobs,
/// and which states `retry` and `cancel` accept. Nothing runs (the pipeline is paused).
@Suite struct JobControlTests {
    typealias C = ControlRig.Call

    @Test func anUnknownCommandAnswersWithTheClosestName() throws {
        let c = try ControlRig()
        let r = try c.run("stauts", as: nil)
        #expect(r.closed == 0)
        #expect(r.reply.code == .unknownCommand)
        #expect(r.reply.message?.hasPrefix(#"unknown command "stauts" (did you mean "status"?)"#) == true)
        #expect(r.reply.message?.contains("commands: ") == true)
    }

    /// A NUL in `enqueue`'s job line (its memo, a field) is refused, as in a queue file,
    /// naming where it is, and nothing is enqueued.
    @Test func enqueueRefusesANULInTheMemoOrAField() throws {
        let c = try ControlRig()
        let r = try c.run([C(command: "enqueue", args: ["job": ["memo": "a\u{0}b"]], caller: ControlRig.owner),
                           C(command: "enqueue", args: ["job": ["memo": "ok", "fields": ["tags": ["x", "\u{0}"]]]], caller: ControlRig.owner)])
        #expect(r.closed == 0)
        #expect(r.replies[0].code == .badRequest && r.replies[0].message?.hasPrefix(#"argument "job".memo contains a NUL character"#) == true)
        #expect(r.replies[1].code == .badRequest
                && r.replies[1].message?.hasPrefix(#"argument "job".fields.tags[1] contains a NUL character"#) == true)
        #expect(try c.journal.counts().values.reduce(0, +) == 0)
    }

    @Test func aUserListsOnlyTheirOwnJobsAndAnotherUsersJobIsNotFound() throws {
        let c = try ControlRig()
        let mine = try c.queuedJob(owner: ControlRig.owner), theirs = try c.queuedJob(owner: ControlRig.other)
        let r = try c.run([C(command: "jobs", args: [:], caller: ControlRig.owner),
                           C(command: "jobs", args: [:], caller: ControlRig.admin),
                           C(command: "job", args: ["job": .int(mine)], caller: ControlRig.owner),
                           C(command: "job", args: ["job": .int(theirs)], caller: ControlRig.owner),
                           C(command: "job", args: ["job": 9999], caller: ControlRig.admin),
                           C(command: "jobs", args: ["state": "bogus"], caller: ControlRig.admin)])
        #expect(r.closed == 0)
        let ids = { (reply: ControlRig.Reply) in (reply.value?["jobs"]?.arrayValue ?? []).compactMap { $0["id"]?.intValue } }
        #expect(ids(r.replies[0]) == [mine])
        #expect(Set(ids(r.replies[1])) == [mine, theirs])
        let job = try #require(r.replies[2].value)
        #expect(job["id"]?.intValue == mine && job["state"] == "queued" && job["owner"]?.stringValue == ControlRig.owner.name)
        #expect(job["history"]?.arrayValue?.first?["event"] == "accepted")
        // Another user's job looks exactly like a job that does not exist.
        #expect(r.replies[3].code == .notFound && r.replies[4].code == .notFound)
        #expect(r.replies[5].code == .badRequest && r.replies[5].message?.contains("unknown state \"bogus\"") == true)
    }

    /// A cursor `jobs` never gave (altered, another command's) answered the first page again,
    /// so a client paging on never ended; it is refused. One it gave pages on.
    @Test func jobsRefusesACursorItDidNotGive() throws {
        let c = try ControlRig()
        let first = try c.queuedJob(owner: ControlRig.owner), second = try c.queuedJob(owner: ControlRig.owner)
        let r = try c.run([C(command: "jobs", args: ["cursor": "AAAA%%%"], caller: ControlRig.owner),
                           C(command: "jobs", args: ["cursor": "-5"], caller: ControlRig.owner),
                           C(command: "jobs", args: ["limit": 1], caller: ControlRig.owner),
                           C(command: "jobs", args: ["limit": 1, "cursor": .string(String(second))], caller: ControlRig.owner)])
        #expect(r.replies[0].code == .badRequest && r.replies[0].message?.hasPrefix("invalid cursor") == true, "\(r.replies[0])")
        #expect(r.replies[1].code == .badRequest)
        #expect(r.replies[2].value?["jobs"]?.arrayValue?.first?["id"]?.intValue == second)
        #expect(r.replies[2].value?["cursor"] == .string(String(second)))
        #expect(r.replies[3].value?["jobs"]?.arrayValue?.first?["id"]?.intValue == first)
    }

    @Test func retryTakesOnlyFailedOrCancelledJobsAndOnlyTheOwners() throws {
        let c = try ControlRig()
        let failed = try c.failedJob(owner: ControlRig.owner), queued = try c.queuedJob(owner: ControlRig.owner)
        let noPhoto = try c.photoRefusedJob(owner: ControlRig.owner)
        let r = try c.run([C(command: "retry", args: ["job": .int(failed)], caller: ControlRig.other),
                           C(command: "retry", args: ["job": .int(queued)], caller: ControlRig.owner),
                           C(command: "retry", args: ["job": .int(failed)], caller: ControlRig.owner),
                           C(command: "retry", args: ["job": .int(noPhoto)], caller: ControlRig.owner)])
        #expect(r.closed == 0)
        #expect(r.replies[0].code == .notFound)
        #expect(r.replies[1].code == .conflict)
        #expect(r.replies[1].message == "job \(queued) is queued; only failed or cancelled jobs can be retried")
        #expect(r.replies[2].value?["state"] == "queued")
        #expect(try c.journal.job(failed)?.state == .queued)
        #expect(try c.journal.history(failed).last?.event == "retried")
        #expect(try c.journal.job(failed)?.attempts == 0)  // fresh attempts
        // A memo whose photo never came waits for it again.
        #expect(r.replies[3].value?["state"] == "waiting")
    }

    @Test func cancelEndsAnUnfinishedJobOnceAndOnlyTheOwners() throws {
        let c = try ControlRig()
        let failed = try c.failedJob(owner: ControlRig.owner), queued = try c.queuedJob(owner: ControlRig.owner)
        let r = try c.run([C(command: "cancel", args: ["job": .int(queued)], caller: ControlRig.other),
                           C(command: "cancel", args: ["job": .int(queued)], caller: ControlRig.owner),
                           C(command: "cancel", args: ["job": .int(queued)], caller: ControlRig.owner),
                           C(command: "cancel", args: ["job": .int(failed)], caller: ControlRig.admin),
                           C(command: "retry", args: ["job": .int(queued)], caller: ControlRig.owner)])
        #expect(r.closed == 0)
        #expect(r.replies[0].code == .notFound)
        #expect(r.replies[1].value?["state"] == "cancelled")
        #expect(r.replies[2].code == .conflict && r.replies[2].message == "job \(queued) is already cancelled")
        #expect(r.replies[3].code == .conflict && r.replies[3].message == "job \(failed) is already failed")
        #expect(r.replies[4].value?["state"] == "queued")  // a cancelled job may be retried
    }

    /// A job waiting for another (`after_job`: a photo's second job waits for its first) runs
    /// once that one is cancelled, one by one or by state: cancel pumped nothing, and it stayed
    /// queued until something else woke the scheduler (here nothing does).
    @Test func cancelLetsTheJobWaitingForTheCancelledOneRun() throws {
        for bulk in [false, true] {
            let c = try ControlRig(paused: false)
            let (first, waiting) = try c.photoJobAndOneWaitingForIt("y.jpg", owner: ControlRig.owner, firstAtStage: bulk ? 1 : 0)
            let args: [String: JSONValue] = bulk ? ["state": "queued", "stage": "second"] : ["job": .int(first)]
            let r = try c.run([C(command: "cancel", args: args, caller: ControlRig.owner)], timeout: 5) { (try? c.rig.state(waiting)) == .done }
            #expect(r.closed == 0)
            #expect(bulk ? r.replies[0].value?["changed"] == 1 : r.replies[0].value?["state"] == "cancelled", "\(r.replies)")
            #expect(try c.rig.state(first) == .cancelled && c.rig.state(waiting) == .done, "bulk: \(bulk)")
        }
    }

    @Test func pauseIsForAdminsAndNamesOnlyStagesTheDefinitionHas() throws {
        let c = try ControlRig(paused: false)
        let r = try c.run([C(command: "pause", args: ["stage": "second"], caller: ControlRig.owner),
                           C(command: "pause", args: ["stage": "nope"], caller: ControlRig.admin),
                           C(command: "pause", args: ["stage": "second"], caller: ControlRig.admin)])
        #expect(r.closed == 0)
        #expect(r.replies[0].code == .forbidden)
        #expect(r.replies[1].code == .notFound && r.replies[1].message?.contains("stages: first, second") == true)
        #expect(r.replies[2].value == ["paused": false, "paused_stages": ["second"]])
    }
}
