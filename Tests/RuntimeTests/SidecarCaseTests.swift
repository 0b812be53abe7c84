import Foundation
import Glibc
import Journal
import PhotomemoCore
import TestSupport
import Testing
@testable import Runtime

/// Names that differ only in case (issue 26). Linux names are case-sensitive, so `IMG.JPG`
/// and `img.jpg` are two photos, and `IMG.JPG.json` is `IMG.JPG`'s sidecar, not `IMG.jpg`'s;
/// `IMG.json` is the sidecar of `IMG.<photo extension>` in any case — found from the
/// sidecar's side too (an edit after the photo was taken), not only from the photo's.
@Suite struct SidecarCaseTests {
    func write(_ text: String, _ path: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: path)) }

    @Test func aStemSidecarEditedAfterAMixedCasePhotoWasTakenIsThatPhotosMemo() throws {
        let t = try TestHome()
        try write("photo bytes", t.home.inbox + "/IMG.Jpg")
        try write(#"{"memo": "first"}"#, t.home.inbox + "/IMG.json")
        let scanner = t.scanner()
        _ = scanner.rescan()
        #expect(try t.jobs().map(\.memo.memo) == ["first"])
        try write(#"{"memo": "edited"}"#, t.home.inbox + "/IMG.json.new")
        #expect(rename(t.home.inbox + "/IMG.json.new", t.home.inbox + "/IMG.json") == 0)
        let report = scanner.take([("IMG.json", true)])
        #expect(report.skipped["IMG.json"]?.reason == "memo sidecar of IMG.Jpg", "\(report.skipped)")
        let memos = try t.jobs().map(\.memo.memo)
        #expect(memos.contains("edited"), "\(memos)")
    }

    @Test func namesDifferingOnlyInCaseAreTwoPhotosEachWithItsOwnSidecar() throws {
        let t = try TestHome()
        try write("upper bytes", t.home.inbox + "/IMG.JPG")
        try write("lower bytes", t.home.inbox + "/img.jpg")
        try write(#"{"memo": "upper's"}"#, t.home.inbox + "/IMG.JPG.json")
        try write("another photo", t.home.inbox + "/IMG.jpg")
        _ = t.scanner().rescan()
        let memos = Dictionary(try t.jobs().map { ($0.photo ?? "", $0.memo.memo) }) { a, _ in a }
        #expect(memos == ["IMG.JPG": "upper's", "img.jpg": "", "IMG.jpg": ""], "\(memos)")
    }

    /// An image named `X.json` (a photo by its first bytes) was read as its own sidecar: its
    /// job failed (`memo sidecar X.json: ...`) and the file stayed. It is a photo, no sidecar.
    @Test func anImageNamedLikeASidecarIsNotItsOwnSidecar() throws {
        let t = try TestHome()
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0, 16] + Array("JFIF".utf8)
        try Data(jpeg).write(to: URL(fileURLWithPath: t.home.inbox + "/X.json"))
        _ = t.scanner().rescan()
        let jobs = try t.jobs()
        #expect(jobs.map(\.photo) == ["X.json"] && jobs.allSatisfy { $0.state != .failed }, "\(jobs)")
        #expect(!MemoSidecar.candidates(forPhoto: "a/X.json").contains("a/X.json"))
    }
}
