import Foundation
import TestSupport
import Testing

/// `photomemo gallery` of the seed scenarios' records, looked at in headless Chromium:
/// every image loads, nothing outside DIR is requested, no script exists or runs, a memo
/// of `<script>` is text, and it is usable at phone width in dark mode.
@Suite(.serialized) struct GalleryBrowserTests {
    /// Goods with prices, tasks with dates (one without a photo), a house with an address,
    /// a restaurant and a photo referring to it (deleteSelf), and a camera memo whose text
    /// is markup. Returns the daemon and the restaurant's id.
    static func seed() throws -> (DaemonHarness, String) {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        try d.start()
        try d.append(#"{"type":"Restaurant","memo":"Noodle bar","fields":{"name":"Ichiran"}}"# + "\n")
        try d.waitIdle(jobs: 1)
        let restaurant = try #require(try json(d, ["query", "TRUEPREDICATE", "--type", "Restaurant"])["records"]?.arrayValue?.first?["id"]?.stringValue)
        try d.append([
            #"{"photo":"g1.jpg","type":"GoodsMaster","memo":"red shoe","fields":{"code":"A-001","salesPrice":1200,"costRate":0.35}}"#,
            #"{"photo":"g2.jpg","type":"GoodsMaster","memo":"blue hat","fields":{"code":"B-001","salesPrice":450,"costRate":0.2}}"#,
            #"{"photo":"t1.jpg","type":"Task","memo":"buy milk","fields":{"date":"2026-12-03T09:00:00Z","priority":2}}"#,
            #"{"type":"Task","memo":"no picture needed","fields":{"date":"2026-12-02T12:00:00Z","priority":3}}"#,
            #"{"photo":"h1.jpg","type":"Houses","memo":"sunny, two floors","fields":{"address":"1-2-3 Shibuya, Tokyo"}}"#,
            #"{"photo":"dish.jpg","type":"Photo","memo":"dish 0","fields":{"restaurant":{"ref":"\#(restaurant)","action":"deleteSelf"}}}"#,
            #"{"photo":"cam.jpg","memo":"<script>alert(1)</script>","fields":{"tags":["camera","memo"]}}"#,
        ].joined(separator: "\n") + "\n")
        for (photo, name) in [("Canon_40D.jpg", "g1.jpg"), ("exif-org_canon-ixus.jpg", "g2.jpg"), ("Nikon_D70.jpg", "t1.jpg"),
                              ("orientation_landscape_1.jpg", "h1.jpg"), ("orientation_portrait_1.jpg", "dish.jpg"), ("Pentax_K10D.jpg", "cam.jpg")] {
            try d.drop(photo, as: name)
        }
        try d.waitIdle(jobs: 8, timeout: 120)
        #expect(try d.stateCounts()["done"] == 8)
        return (d, restaurant)
    }

    @Test(.enabled(if: GalleryProbe.chromium != nil, "chromium is not installed (scripts/setup installs it)"))
    func seedScenariosRenderInChromium() throws {
        let (d, restaurant) = try Self.seed()
        let dir = d.root + "/gallery"
        let summary = try json(d, ["gallery", dir])
        #expect(summary["records"] == 8 && summary["written"] == 8 && summary["warnings"] == [], "\(summary)")
        let records = try json(d, ["query", "TRUEPREDICATE", "--sort", "-created", "--limit", "1000"])["records"]?.arrayValue ?? []
        let byMemo = Dictionary(records.map { ($0["memo"]?.stringValue ?? "", $0["id"]?.stringValue ?? "") }, uniquingKeysWith: { a, _ in a })
        let dish = try #require(byMemo["dish 0"]), markup = try #require(byMemo["<script>alert(1)</script>"])

        // A page made by the test, not the gallery, shows the checks can fail: a missing image,
        // a request outside its folder and a script are all seen.
        let control = d.root + "/control"
        try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
        try #"<!DOCTYPE html><html><body><img src="missing.jpg" alt="gone"><img src="http://127.0.0.1:9/x.png" alt="far"><script>document.title = "ran"</script></body></html>"#
            .write(toFile: control + "/page.html", atomically: true, encoding: .utf8)

        let pages = ["\(dir)/index.html", "\(dir)/r/\(dish).html", "\(dir)/r/\(markup).html"]
        let views = try GalleryProbe.load(pages + [control + "/page.html"], shots: d.root + "/shots")
        #expect(views.count == 8)
        for v in views where !v.url.contains("/control/") {
            #expect(v.brokenImages.isEmpty, "\(v.view) \(v.url): images that did not load: \(v.brokenImages)")
            #expect(v.imagesWithoutAlt.isEmpty, "\(v.url): images without alt text: \(v.imagesWithoutAlt)")
            #expect(v.requestsOutside(dir).isEmpty, "\(v.url) requested outside the gallery: \(v.requestsOutside(dir))")
            #expect(v.scripts == 0 && v.handlers.isEmpty && v.dialogs.isEmpty, "\(v.url): script \(v.scripts) \(v.handlers) \(v.dialogs)")
            #expect(!v.overflows, "\(v.view) \(v.url) is wider than its window: \(v.json["scrollWidth"] ?? .null)")
            if v.view == "phone" { #expect(v.backgroundLightness < 60, "dark mode: \(v.json["background"] ?? .null)") }
            else { #expect(v.backgroundLightness > 200, "light mode: \(v.json["background"] ?? .null)") }
            let png = try Data(contentsOf: URL(fileURLWithPath: v.screenshot))
            #expect(png.count > 10_000 && png.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]), "\(v.screenshot): \(png.count) bytes")
        }
        let index = try #require(views.first { $0.url.hasSuffix("/index.html") && $0.view == "desktop" })
        #expect(index.cards == records.compactMap { $0["id"]?.stringValue.map { "card-" + $0 } }, "cards in the query's order")
        #expect(index.images.count == 6, "one thumbnail per record with a photo")
        #expect(index.text.contains("<script>alert(1)</script>") && index.text.contains("1-2-3 Shibuya, Tokyo") && index.text.contains("1200"))
        let dishPage = try #require(views.first { $0.url.hasSuffix("/\(dish).html") && $0.view == "desktop" })
        #expect(dishPage.links.contains(URL(fileURLWithPath: "\(dir)/r/\(restaurant).html").absoluteString), "\(dishPage.links)")
        #expect(dishPage.text.contains("Restaurant: Noodle bar") && dishPage.text.contains("thumbnail"))
        #expect(dishPage.images.first?["naturalWidth"] == 860, "the display rendition: \(dishPage.images)")
        let markupPage = try #require(views.first { $0.url.hasSuffix("/\(markup).html") && $0.view == "desktop" })
        #expect(markupPage.text.contains("<script>alert(1)</script>") && markupPage.text.contains("PENTAX"), "\(markupPage.text)")
        #expect(FileManager.default.fileExists(atPath: "\(dir)/r/\(restaurant).html"))

        let probe = try #require(views.first { $0.url.hasSuffix("/control/page.html") })
        #expect(probe.brokenImages.count == 2 && probe.requestsOutside(control).count == 1 && probe.scripts == 1,
                "the probe misses what it is meant to catch: \(probe.json)")
        #expect(d.stop().status == 0)
    }
}
