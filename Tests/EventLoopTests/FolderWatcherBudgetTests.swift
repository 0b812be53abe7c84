import Foundation
import Glibc
import StageKit
import Testing
@testable import EventLoop

/// A recursive watcher's watches count against fs.inotify.max_user_watches of the daemon's
/// uid (root), shared by every root process: a user's flood of empty folders in the inbox
/// gets at most half of them; the rest of the tree is left to the periodic rescan.
@Suite struct FolderWatcherBudgetTests {
    @Test func aRecursiveWatcherStopsAtItsBudgetOfSubfolders() throws {
        let limit = try String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8)
        #expect(FolderWatcher.subfolderBudget == Int(limit.trimmingCharacters(in: .whitespacesAndNewlines))! / 2)

        let dir = NSTemporaryDirectory() + "pm-budget-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let loop = try EventLoop()
        let watcher = try FolderWatcher(loop: loop, path: dir, recursive: true, maxSubfolders: 2) { _ in }
        for name in ["a", "b", "c"] {
            try FileManager.default.createDirectory(atPath: dir + "/" + name, withIntermediateDirectories: false)
            let fd = open(dir + "/" + name, O_RDONLY | O_DIRECTORY)
            defer { close(fd) }
            if name == "c" {
                #expect(throws: PhotomemoError.self) { try watcher.watch(folder: fd, as: name) }
            } else {
                try watcher.watch(folder: fd, as: name)
            }
        }
        #expect(watcher.watchedSubfolders == 2)
        watcher.close()
        loop.run()
        #expect(loop.close() == 0)
    }
}
