import Foundation
import Glibc
import StageKit
import Testing
@testable import PhotomemoCore

/// The hidden name a release renames a photo to (`InboxRelease`) says whose it is and where
/// it goes back, so one a killed daemon left is put back by the next.
@Suite struct ReleaseAsideNameTests {
    typealias Originals = InboxOptions.Originals

    @Test func anotherProcesssAsideGoesBackUnderItsName() {
        let mine = Originals.asideName(for: "IMG-1 copy.jpg")
        #expect(mine.hasPrefix(".photomemo-release-\(Originals.processToken)-"))
        #expect(Originals.leftByAnEarlierRun(mine) == nil, "this process's own release is under way")
        // Another process's, whatever its pid (a restarted daemon in a container has its last one's).
        let earlier = ".photomemo-release-5eed-" + mine.split(separator: "-", maxSplits: 3)[3]
        #expect(Originals.leftByAnEarlierRun(earlier) == "IMG-1 copy.jpg")
        for other in [".photomemo-release-ab12", ".photomemo-release-12-ab-", ".photomemo-release-xyz-ab-IMG.jpg", ".photomemo-released-1-a-x.jpg", "IMG.jpg", ".sync.tmp"] {
            #expect(Originals.leftByAnEarlierRun(other) == nil, "\(other)")
        }
    }

    @Test func aNameTooLongToCarryIsCutBeforeItsExtension() {
        let long = String(repeating: "é", count: 120) + ".heic"  // 245 bytes
        let aside = Originals.asideName(for: long)
        #expect(aside.utf8.count <= 255)
        let back = "x" + aside.split(separator: "-", maxSplits: 3)[3]
        let name = Originals.leftByAnEarlierRun(".photomemo-release-1-" + back.dropFirst())
        #expect(name?.hasSuffix(".heic") == true && name!.utf8.count <= 200 && long.hasPrefix(name!.dropLast(5)))
    }

    /// An "extension" of 240 bytes left nothing to cut and trapped (attack review): it is cut too.
    @Test func aNameWhoseExtensionAloneIsTooLongIsCutWhole() {
        let long = "y." + String(repeating: "e", count: 240)
        let aside = Originals.asideName(for: long)
        #expect(aside.utf8.count <= 255)
        let name = Originals.leftByAnEarlierRun(".photomemo-release-1-" + aside.split(separator: "-", maxSplits: 3)[3])
        #expect(name.map { $0.utf8.count == 200 && long.hasPrefix($0) } == true, "\(name ?? "nil")")
    }

    /// An mtime past 2262 (any user's `touch -d 2400-01-01`) has nanoseconds past Int64:
    /// the seal wraps them, and still changes with the time (it trapped at intake).
    @Test func aSealOfAFileFromTheYear2400DoesNotTrap() {
        var st = stat()
        st.st_mtim = timespec(tv_sec: 13_569_465_600, tv_nsec: 0)  // 2400-01-01
        st.st_ctim = timespec(tv_sec: Int.max, tv_nsec: 999_999_999)
        let seal = PhotoSeal.seal(st)
        st.st_mtim.tv_sec += 1
        #expect(PhotoSeal.seal(st) != seal)
        #expect(PhotoSeal.identity(st).split(separator: ":").count == 4)
    }
}
