import CPosix
import Foundation
import Glibc
import PhotomemoCore
import StageKit

/// What a killed daemon left running: its exec stages, exec workers' children and exec
/// sinks, and whatever they started. A SIGKILL (an operator, the OOM killer) ends the
/// daemon but not them: the workers die with it, their children do not, and a per-job
/// program runs on beside the run the next start makes of its job. systemd's control
/// group ends them all; outside it, the next start does. Every subprocess carries
/// `PHOTOMEMO_RUN=HOME#instance` (`SubprocessEnvironment.runTag`), so does each process it
/// starts: a process of this user whose environment names this home and another instance
/// is a leftover and gets SIGKILL (through a pidfd, so never a later process that reused
/// its pid). A program that clears its environment is not found.
enum LeftoverProcesses {
    /// A new tag for this run, and the leftovers of earlier runs of `home` ended: call at
    /// start, under the home's lock and before anything is spawned. Returns how many were.
    static func endAndTag(home: String) -> Int {
        let prefix = SubprocessEnvironment.runVariable + "=" + home + "#"
        let tag = "\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        SubprocessEnvironment.runTag.value = home + "#" + tag
        var ended = 0
        for pid in processIDs() where pid != getpid() {
            // Owned by this user (the /proc folder's owner is the process's effective uid).
            var st = stat()
            guard stat("/proc/\(pid)", &st) == 0, st.st_uid == geteuid() else { continue }
            let fd = pm_pidfd_open(pid)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard let env = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ")) else { continue }
            let leftover = env.split(separator: 0).contains { entry in
                let text = String(decoding: entry, as: UTF8.self)
                return text.hasPrefix(prefix) && text.dropFirst(prefix.count) != tag
            }
            if leftover, pm_pidfd_send_signal(fd, SIGKILL) == 0 { ended += 1 }
        }
        return ended
    }

    private static func processIDs() -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }
    }
}
