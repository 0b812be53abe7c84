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
}
