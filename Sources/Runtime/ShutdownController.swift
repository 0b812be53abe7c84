import EventLoop
import Glibc
import PhotomemoCore
import StageKit

/// SIGTERM/SIGINT: the daemon's services stopped in reverse order of start, as
/// swift-service-lifecycle does — the socket and intake first, the scheduler (which lets
/// its running stages finish within the grace) last — then the loop's remaining handles
/// closed so `loop.run()` returns. Subprocesses still running then (exec sinks, or stages
/// past the grace) get SIGTERM, SIGKILL 2 s later, and the daemon exits at most 3 s after
/// that. A second signal exits at once (running stages resume at the next start).
final class ShutdownController {
    private let services: ServiceGroup
    private let lane: SerialLane
    private let scheduler: Scheduler
    private let deliverer: NotificationDeliverer
    private let wakeup: LoopWakeup
    private let notify: SystemdNotify
    private let graceMs: UInt64
    private let graceTimer: LoopTimer
    private let exitTimer: LoopTimer
    private let subprocesses = SubprocessGroups.shared
    private var signals: [SignalWatcher] = []
    private var stopping = false

    init(loop: EventLoop, services: ServiceGroup, lane: SerialLane, scheduler: Scheduler, deliverer: NotificationDeliverer,
         wakeup: LoopWakeup, notify: SystemdNotify, graceSeconds: Double) throws {
        (self.services, self.lane, self.scheduler, self.deliverer) = (services, lane, scheduler, deliverer)
        (self.wakeup, self.notify, graceMs) = (wakeup, notify, UInt64(graceSeconds * 1000))
        graceTimer = try LoopTimer(loop: loop)
        exitTimer = try LoopTimer(loop: loop)
    }

    /// Stops on SIGTERM and SIGINT; `reload` on SIGHUP. The watchers are closed on the way out.
    func watchSignals(on loop: EventLoop, reload: @escaping () -> Void) throws {
        signals.append(try SignalWatcher(loop: loop, signal: SIGTERM) { [unowned self] in self.stop(signal: $0) })
        signals.append(try SignalWatcher(loop: loop, signal: SIGINT) { [unowned self] in self.stop(signal: $0) })
        signals.append(try SignalWatcher(loop: loop, signal: SIGHUP) { _ in reload() })
    }

    func stop(signal signum: Int32) {
        if stopping {
            Log.warning("second signal: exiting now; running stages resume at the next start")
            subprocesses.killAll()
            Self.exitNow()
        }
        stopping = true
        _ = notify.send("STOPPING=1")
        Log.notice("signal \(signum): stopping intake, letting \(scheduler.runningCount) running stages finish")
        graceTimer.start(afterMs: graceMs) { [unowned self] in
            Log.warning("grace period over with \(scheduler.runningCount) stages running; they resume at the next start")
            endSubprocesses()
        }
        services.stop { [self] in
            lane.whenIdle { [self] in
                graceTimer.close()
                scheduler.close()
                wakeup.close()
                for s in signals { s.close() }
                // No stage runs now; exec sinks still delivering are ended (and retried at the next start).
                endSubprocesses()
                deliverer.whenIdle { [self] in exitTimer.close() }
            }
        }
    }

    /// Ends the process while stage threads may still run (past the grace, or a second
    /// signal): `_exit`, not `exit`, whose atexit handlers and C++ static destructors (libheif's,
    /// libvips') would run under a decoder still using them (SIGSEGV). The log is written
    /// unbuffered; the journal is crash-safe, and the interrupted stages resume at the next start.
    private static func exitNow() -> Never { _exit(0) }

    /// TERM to every subprocess group now (each run sends KILL after 2 s); exit in any case 3 s later.
    private func endSubprocesses() {
        subprocesses.terminate()
        if !exitTimer.isClosed {
            exitTimer.start(afterMs: 3000) { [subprocesses] in
                Log.warning("\(subprocesses.liveCount) subprocesses did not end; exiting")
                subprocesses.killAll()
                Self.exitNow()
            }
        }
    }
}
