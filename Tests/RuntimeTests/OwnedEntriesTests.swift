import Foundation
import StageKit
import Testing
@testable import Runtime

/// The inbox's entries left alone, and its stale files, are named up to 1,000 a user and
/// counted past that (`OwnedEntries`): one user's 200,000 empty `.txt` files held 57 MB of names.
@Suite struct OwnedEntriesTests {
    let bob = InboxScanner.SkippedEntry(reason: "not a photo (.txt)", owner: "bob")
    let alice = InboxScanner.SkippedEntry(reason: "not a photo (.mov)", owner: "alice")

    /// A whole walk names a user's first 1,000 and counts the rest; another user's are
    /// named as ever.
    @Test func aWalkNamesAUsersFirstThousandAndCountsTheRest() {
        var walked = SkippedEntries(counting: true)
        for i in 0..<1_500 { walked.set("junk/\(i).txt", bob) }
        for i in 0..<3 { walked.set("a\(i).mov", alice) }
        walked.set("junk/7.txt", bob)  // looked at again: still one entry
        #expect(walked.named.count == 1_003 && walked.count() == 1_503)
        #expect(walked.count(of: "bob") == 1_500 && walked.count(of: "alice") == 3 && walked.count(of: "carol") == 0)
    }

    /// Sparse stale files may claim 2^62 bytes each (tmpfs, XFS): their owner's sum holds at
    /// Int64.max, named or counted past the names (it overflowed and trapped the daemon at
    /// every whole walk). So does a quota's allowance over them.
    @Test func sparseFilesOfExabytesAddUpWithoutATrap() throws {
        var stale = StaleEntries(counting: true)
        let huge = InboxScanner.StaleEntry(owner: "bob", bytes: 1 << 62, idleSeconds: 1e6)
        stale.set(".a.jpg.part", huge)
        stale.set(".b.jpg.part", huge)
        #expect(stale.byOwner()["bob"]?.bytes == .max)
        for i in 0..<1_002 { stale.set(".\(i).part", huge) }  // past the names: counted
        #expect(stale.byOwner()["bob"]?.bytes == .max)
        var allowance = QuotaMeter.Allowance(owner: "bob", limits: Quota(records: nil, bytes: 1 << 40), records: 0, bytes: .max)
        #expect(allowance.take(bytes: 1 << 62)?.code == .overQuota)
        #expect([Int64.max, 1, 2].saturatedSum { $0 } == .max && [Int64.min, -1].saturatedSum { $0 } == .min)
    }

    /// One name at a time (the watcher's looks), past the cap nothing is counted (it cannot
    /// tell a new entry from one the walk counted); a user below the cap has a named entry
    /// gone free its room.
    @Test func lookedAtOneByOneAUserPastTheCapIsNotCountedTwice() {
        var entries = SkippedEntries(counting: true)
        for i in 0..<1_200 { entries.set("\(i).txt", bob) }
        entries.counting = false
        for i in 0..<1_200 { entries.set("\(i).txt", bob) }  // the same files looked at again
        #expect(entries.count(of: "bob") == 1_200)
        for i in 0..<1_000 { entries.set("a\(i).mov", alice) }
        entries.remove("a0.mov")
        entries.set("new.mov", alice)
        #expect(entries["new.mov"] == alice && entries.count(of: "alice") == 1_000)
        entries.removeAll { $0.hasPrefix("1") }
        #expect(entries.named.keys.allSatisfy { !$0.hasPrefix("1") } && entries["new.mov"] == alice)
    }

    /// A real inbox: 1,200 files that are not photos, one user's; the walk's report names
    /// 1,000 and its count holds all.
    @Test func aRescanOfManyFilesThatAreNotPhotosNamesAThousand() throws {
        let t = try TestHome()
        try FileManager.default.createDirectory(atPath: t.home.inbox + "/junk", withIntermediateDirectories: true)
        for i in 0..<1_200 { try Data().write(to: URL(fileURLWithPath: t.home.inbox + "/junk/\(i).txt")) }
        let scanner = InboxScanner(inbox: t.home.inbox, journal: t.journal, quarantine: t.quarantine, settleSeconds: 0)
        let walk = InboxWalk(under: "")
        while !walk.finished { _ = scanner.step(walk) }
        #expect(walk.found.skipped.named.count == 1_000 && walk.found.skipped.count() == 1_200)
        #expect(scanner.rescan().skipped.count == 1_000)
    }

    /// Stale files past a user's 1,000 named ones still count, with their bytes (a quota
    /// charges them: `QuotaMeter.noteStale`).
    @Test func staleFilesPastTheNamedOnesKeepTheirBytes() {
        var walked = StaleEntries(counting: true)
        for i in 0..<1_200 { walked.set("\(i).part", InboxScanner.StaleEntry(owner: "bob", bytes: 10, idleSeconds: 100_000)) }
        walked.set("a.part", InboxScanner.StaleEntry(owner: "alice", bytes: 7, idleSeconds: 100_000))
        let by = walked.byOwner()
        #expect(walked.named.count == 1_001 && by["bob"]?.count == 1_200 && by["bob"]?.bytes == 12_000 && by["alice"]?.bytes == 7)
    }

    /// Past a user's named ones, a file renamed (counted by the walk under its old name) is
    /// not named and counted again under its new one: the total stays what is there.
    @Test func aRenamedFilePastTheNamedOnesIsNotCountedTwice() {
        var entries = SkippedEntries(counting: true)
        for i in 0..<1_200 { entries.set("\(i).txt", bob) }
        entries.counting = false
        for i in 0..<100 { entries.remove("\(i).txt") }  // deleted, named ones
        for i in 0..<100 { entries.set("renamed-\(i).txt", bob) }  // counted ones under new names
        #expect(entries.count(of: "bob") == 1_100 && entries["renamed-0.txt"] == nil)
    }
}
