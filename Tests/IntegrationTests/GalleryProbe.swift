import Foundation
import StageKit
import TestSupport

/// What headless Chromium saw when it loaded a page (Fixtures/gallery-probe.py talks to it
/// over the DevTools protocol): one view of one page.
struct PageView {
    let url: String
    let view: String  // "desktop" (1200 wide, light) or "phone" (390 wide, dark)
    let json: JSONValue

    var requests: [String] { strings("requests") }
    var images: [JSONValue] { json["images"]?.arrayValue ?? [] }
    var links: [String] { strings("links") }
    var cards: [String] { strings("cards") }
    var text: String { json["text"]?.stringValue ?? "" }
    var scripts: Int64 { json["scripts"]?.intValue ?? -1 }
    var handlers: [String] { strings("handlers") }
    var dialogs: [String] { strings("dialogs") }
    var screenshot: String { json["screenshot"]?.stringValue ?? "" }
    var overflows: Bool { (json["scrollWidth"]?.intValue ?? 0) > (json["clientWidth"]?.intValue ?? 0) }

    /// The body's background as 0 (black) to 255 (white): "rgb(18, 18, 20)" → 18.7.
    var backgroundLightness: Double {
        let parts = (json["background"]?.stringValue ?? "").split(whereSeparator: { !$0.isNumber && $0 != "." }).compactMap { Double($0) }
        guard parts.count >= 3 else { return -1 }
        if parts.count == 4, parts[3] == 0 { return 255 }  // transparent: the stylesheet did not apply
        return 0.2126 * parts[0] + 0.7152 * parts[1] + 0.0722 * parts[2]
    }

    /// Images that did not load: not complete, or no pixels.
    var brokenImages: [String] {
        images.filter { $0["complete"] != true || ($0["naturalWidth"]?.intValue ?? 0) <= 0 }.map { $0["src"]?.stringValue ?? "?" }
    }

    var imagesWithoutAlt: [String] {
        images.filter { ($0["alt"]?.stringValue ?? "").isEmpty }.map { $0["src"]?.stringValue ?? "?" }
    }

    /// Requests for anything but a file inside `dir`.
    func requestsOutside(_ dir: String) -> [String] {
        let inside = URL(fileURLWithPath: dir).resolvingSymlinksInPath().absoluteString
        let prefix = inside.hasSuffix("/") ? inside : inside + "/"
        return requests.filter { !$0.hasPrefix(prefix) }
    }

    private func strings(_ key: String) -> [String] { (json[key]?.arrayValue ?? []).compactMap(\.stringValue) }
}

enum GalleryProbe {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Loads each file in Chromium, desktop and phone views; screenshots go to `shots`.
    static func load(_ files: [String], shots: String) throws -> [PageView] {
        let script = packageRoot.appendingPathComponent("Tests/IntegrationTests/Fixtures/gallery-probe.py").path
        let urls = files.map { URL(fileURLWithPath: $0).absoluteString }
        let (status, out, err) = try DaemonHarness.spawn(["/usr/bin/python3", script, shots] + urls)
        guard status == 0 else { throw PhotomemoError(.io, "gallery-probe.py exited \(status): \(err.suffix(2000))") }
        return (try JSONValue.parse(out).arrayValue ?? []).map {
            PageView(url: $0["url"]?.stringValue ?? "", view: $0["view"]?.stringValue ?? "", json: $0)
        }
    }
}
