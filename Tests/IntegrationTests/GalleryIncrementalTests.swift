import Foundation
import TestSupport
import Testing

/// Re-running `photomemo gallery` on the same folder: only pages whose inputs changed are
/// rewritten, pages and images of records that are gone are removed.
@Suite(.serialized) struct GalleryIncrementalTests {
    /// The inode of each file: a page rewritten (temp file + rename) gets a new one.
    func inodes(_ dir: String) throws -> [String: UInt64] {
        var out: [String: UInt64] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir + "/r") + ["index.html", "style.css"] {
            let path = name.hasSuffix(".html") && name != "index.html" ? "\(dir)/r/\(name)" : "\(dir)/\(name)"
            out[name] = (try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? NSNumber)?.uint64Value
        }
        return out
    }

    func assets(_ dir: String) throws -> Set<String> { Set(try FileManager.default.contentsOfDirectory(atPath: dir + "/assets")) }

    @Test func reRunsRewriteOnlyWhatChanged() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        try d.start()
        try d.append(#"{"type":"Restaurant","memo":"Noodle bar"}"# + "\n")
        try d.waitIdle(jobs: 1)
        let place = try #require(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.first?["id"]?.stringValue)
        try d.append(#"{"photo":"dish.jpg","type":"Photo","memo":"dish","fields":{"restaurant":{"ref":"\#(place)","action":"deleteSelf"}}}"# + "\n"
                     + #"{"photo":"view.jpg","type":"Photo","memo":"the view"}"# + "\n")
        try d.drop("Nikon_D70.jpg", as: "dish.jpg")
        try d.drop("orientation_landscape_1.jpg", as: "view.jpg")
        try d.waitIdle(jobs: 3, timeout: 60)
        let ids = Dictionary(uniqueKeysWithValues: (try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue ?? []).map {
            ($0["memo"]?.stringValue ?? "", $0)
        })
        let dish = try #require(ids["dish"]?["id"]?.stringValue), view = try #require(ids["the view"]?["id"]?.stringValue)
        let viewAssets = Set(["display", "thumbnail"].compactMap { ids["the view"]?["assets"]?[$0]?["sha256"]?.stringValue.map { $0 + ".jpg" } })
        #expect(viewAssets.count == 2)

        let dir = d.root + "/gallery"
        let first = try json(d, ["gallery", dir])
        #expect(first["written"] == 3 && first["assets_fetched"] == 4, "\(first)")
        #expect(try assets(dir).isSuperset(of: viewAssets))
        let before = try inodes(dir)

        // Nothing changed: nothing is written, not even the index.
        let same = try json(d, ["gallery", dir])
        #expect(same["written"] == 0 && same["unchanged"] == 3 && same["assets_fetched"] == 0, "\(same)")
        #expect(try inodes(dir) == before)

        // The restaurant's memo changes: its page and the dish page (whose link names it) are
        // rewritten; the view's page is not.
        _ = try json(d, ["update", place, "--memo", "Ramen bar"])
        let renamed = try json(d, ["gallery", dir])
        #expect(renamed["written"] == 2 && renamed["unchanged"] == 1, "\(renamed)")
        let after = try inodes(dir)
        #expect(after["\(view).html"] == before["\(view).html"])
        #expect(after["\(dish).html"] != before["\(dish).html"] && after["\(place).html"] != before["\(place).html"])
        #expect(after["index.html"] != before["index.html"] && after["style.css"] == before["style.css"])
        #expect(try String(contentsOfFile: "\(dir)/r/\(dish).html", encoding: .utf8).contains("Restaurant: Ramen bar"))

        // The view is deleted: its page and its two images go; the others stay.
        _ = try json(d, ["delete", view])
        let gone = try json(d, ["gallery", dir])
        #expect(gone["records"] == 2 && gone["removed"] == 1 && gone["assets_removed"] == 2 && gone["written"] == 0, "\(gone)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/r/\(view).html"))
        let left = try assets(dir)
        #expect(left.isDisjoint(with: viewAssets) && left.count == 2, "\(left)")
        let index = try String(contentsOfFile: "\(dir)/index.html", encoding: .utf8)
        #expect(!index.contains("the view"))

        // A missing image is fetched again; --limit and --type choose the records.
        try FileManager.default.removeItem(atPath: "\(dir)/assets/" + (try #require(try assets(dir).first)))
        #expect(try json(d, ["gallery", dir])["assets_fetched"] == 1)
        let one = try json(d, ["gallery", d.root + "/one", "--type", "Photo", "--limit", "1"])
        let onePages = try FileManager.default.contentsOfDirectory(atPath: d.root + "/one/r")
        #expect(one["records"] == 1 && onePages == ["\(dish).html"], "\(onePages)")

        // A folder that holds other things is refused, untouched.
        let other = d.root + "/other"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: other + "/notes.txt", contents: Data("mine".utf8))
        let (status, _, err) = try DaemonHarness.run(["gallery", other, "--home", d.home])
        #expect(status == 1 && err.contains("not empty"), "\(err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: other) == ["notes.txt"])

        // On a terminal it draws a progress bar (script(1) gives it one).
        let (_, tty, _) = try DaemonHarness.spawn(["/usr/bin/script", "-qec", "\(DaemonHarness.binary) gallery \(d.root)/tty --home \(d.home)", "/dev/null"])
        #expect(tty.contains("█") && tty.contains("2/2 pages") && tty.contains("2 records"), "\(tty)")

        // An image the daemon cannot send: reported, exit 1, the page written without it.
        let key = try #require(ids["dish"]?["assets"]?["thumbnail"]?["key"]?.stringValue)
        let thumbnail = try #require(ids["dish"]?["assets"]?["thumbnail"]?["sha256"]?.stringValue)
        #expect(unlink(d.home + "/store/" + key) == 0)
        let (lost, _, lostErr) = try DaemonHarness.run(["gallery", d.root + "/lost", "--home", d.home])
        #expect(lost == 1 && lostErr.contains("record \(dish): no thumbnail image"), "\(lostErr)")
        let lostIndex = try String(contentsOfFile: d.root + "/lost/index.html", encoding: .utf8)
        #expect(lostIndex.contains("no image") && !lostIndex.contains(thumbnail), "the card shows no broken image")
        #expect(FileManager.default.fileExists(atPath: d.root + "/lost/r/\(dish).html"))
        #expect(d.stop().status == 0)
    }
}
