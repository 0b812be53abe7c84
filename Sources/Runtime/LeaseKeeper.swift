import EventLoop
import Foundation
import Journal
import StageKit

/// Keeps this host's claims alive on a shared job queue, and takes back the jobs of a host
/// that stopped renewing its own: every third of a lease, off the loop, it renews the
/// leases of the jobs the scheduler runs now and this host's heartbeat (`photomemo
/// hosts`; a daemon whose host id another took stops), then reclaims expired ones (which
/// wakes the scheduler). Only for a queue with leases (PostgreSQL); a lease the database could
/// not renew in time is lost, and the job runs again elsewhere — stages are idempotent.
final class LeaseKeeper: ClosingService {
    private let loop: EventLoop
    private let queue: any JobQueue & JobControl
    private let scheduler: Scheduler
    private let definition: LiveDefinition
    private let leaseSeconds: Double
    private let timer: LoopTimer
    private var busy = false
    private var lostHostID = false
    private var failures = RepeatingFailureLog("renewing leases")

    private enum Renewal {
        case renewed(ResumeCounts)
        case hostIDTaken(by: Int32?)
    }

    init?(loop: EventLoop, queue: any JobQueue & JobControl, scheduler: Scheduler, definition: LiveDefinition) throws {
        guard let leaseSeconds = queue.leaseSeconds else { return nil }
        self.loop = loop
        self.queue = queue
        self.scheduler = scheduler
        self.definition = definition
        self.leaseSeconds = leaseSeconds
        timer = try LoopTimer(loop: loop)
    }

    func start() {
        let every = UInt64(leaseSeconds * 1000 / 3)
        timer.start(afterMs: every, repeatMs: every) { [unowned self] in self.tick() }
    }

    func close() { timer.close() }

    private func tick() {
        guard !busy, !lostHostID else { return }
        busy = true
        let queue = self.queue, running = scheduler.leasedJobs
        let maxAttempts = definition.current.retry.maxAttempts
        loop.submit({ () -> Result<Renewal, Error> in
            Result {
                // Another daemon took the host id (`HostClaim`): the leases are its now.
                guard try queue.renewHeartbeat(HostClaim.me, now: unixNow()) else {
                    return .hostIDTaken(by: try queue.lastHeartbeat()?.daemon.pid)
                }
                try queue.renewLeases(running, now: unixNow())
                return .renewed(try queue.reclaimExpiredLeases(maxAttempts: maxAttempts, now: unixNow()))
            }
        }) { [unowned self] result in
            self.busy = false
            switch result {
            case .success(.hostIDTaken(let pid)):
                self.lostHostID = true
                Log.error("host id \(queue.host) was taken by another daemon (pid \(pid.map(String.init) ?? "?")) while this one could not renew it: stopping; give each daemon its own --host-id")
                kill(getpid(), SIGTERM)  // the one way a daemon stops: reverse order, grace for running stages
            case .success(.renewed(let counts)):
                self.failures.succeeded()
                if counts.resumed + counts.failed > 0 {
                    Log.notice("took back \(counts.resumed) jobs whose host's lease ran out (\(counts.failed) failed: out of attempts)")
                    self.scheduler.pump()
                }
            case .failure(let e):
                self.failures.failed("\(e)")
            }
        }
    }
}
