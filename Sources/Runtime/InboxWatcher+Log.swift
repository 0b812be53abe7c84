import EventLoop
import Foundation
import StageKit

/// What a look at the inbox did, in the log and on the event bus (moved out of
/// InboxWatcher.swift unchanged).
extension InboxWatcher {
    func log(_ report: InboxScanner.Report) {
        for (name, outcome, owner) in report.outcomes {
            switch outcome {
            case .created(let job, _): Log.info("took \(name)", job: job)
            case .joined(let job): Log.info("took \(name): joined its memo", job: job)
            case .duplicate(let job, let of): Log.info("took \(name): same bytes as job \(of)", job: job)
            case .failed(let job, let reason): Log.warning("\(name): \(reason)", job: job)
            case .alreadyTaken: break
            }
            events.publish(outcome, source: "inbox/\(name)", owner: owner)
        }
        for r in report.rejected { Log.warning("quarantined inbox entry \(r)") }
        for n in report.removedDuplicates { Log.info("removed \(n) from the inbox: a copy of a finished job's photo") }
        for n in report.releasedLate { Log.info("released \(n) from the inbox: its job stored it, and it was away when released") }
        for e in report.errors { Log.error("inbox: \(e)") }
        // Said once as a user reaches the cap, not at every look while they stay there.
        for owner in report.atCap.subtracting(atCap).sorted() {
            Log.notice("inbox: \(owner) has \(MemoIntake.maxUnfinishedPerUser) unfinished jobs, the most a user may have; their inbox files are taken as those finish")
        }
        atCap.formUnion(report.atCap)
        for (owner, why) in report.overQuota where !overQuota.contains(owner) { Log.notice("inbox: \(why); their inbox files wait") }
        overQuota.formUnion(report.overQuota.keys)
        if report.outcomes.contains(where: { $0.outcome != .alreadyTaken }) { onJobs() }
    }
}
