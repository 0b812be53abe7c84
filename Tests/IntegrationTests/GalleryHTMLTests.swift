import Testing
import StageKit
@testable import photomemo

/// The gallery's one HTML helper: record text is escaped in text and attribute contexts,
/// and a URL can only be a path inside the gallery.
struct GalleryHTMLTests {
    @Test func textAndAttributesAreEscaped() {
        let memo = #"<script>alert(1)</script> & "quotes" 'too'"#
        let page = HTML.element("p", [.text("title", memo)], [HTML(memo)]).markup
        #expect(page == #"<p title="&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;too&#39;">"#
                + #"&lt;script&gt;alert(1)&lt;/script&gt; &amp; "quotes" 'too'</p>"#)
        #expect(HTML("a\u{0}b").markup == "a\u{FFFD}b")
    }

    @Test func pathsStayInsideTheGallery() {
        #expect(GalleryPath(["assets", "ab.jpg"], fromDepth: 1).url == "../assets/ab.jpg")
        // A segment cannot become a scheme, a host, a query or another folder.
        #expect(GalleryPath(["r", "javascript:alert(1)"], fromDepth: 0).url == "r/javascript%3Aalert%281%29")
        #expect(GalleryPath(["//evil.example/x?y#z"], fromDepth: 0).url == "%2F%2Fevil.example%2Fx%3Fy%23z")
        #expect(GalleryPath(["é \""], fromDepth: 0).url == "%C3%A9%20%22")
    }

    /// The helper refuses (as a precondition) what these name. Checked through the rule,
    /// not with exit tests: their child-reaping thread takes other tests' daemons' exits.
    @Test func aURLOrAScriptCannotBeWrittenAsText() {
        #expect(HTML.Attribute.text("href", "javascript:alert(1)").misuse == "href cannot take a text value")
        #expect(HTML.Attribute.text("onerror", "alert(1)").misuse == "onerror cannot take a text value")
        #expect(HTML.Attribute.text("style", "x").misuse != nil)
        #expect(HTML.Attribute.text("title", "fine").misuse == nil)
        #expect(HTML.Attribute.path("title", GalleryPath(["a"], fromDepth: 0)).misuse == "title does not take a URL")
        #expect(HTML.misuse(element: "script") == "the gallery writes no <script>")
        #expect(HTML.misuse(element: "p") == nil)
    }

    @Test func recordPagesAreNamedSafely() {
        #expect(GalleryRecord.pageName("r3c1f0e0a4e2b7d915c6a08f") == "r3c1f0e0a4e2b7d915c6a08f.html")
        let odd = GalleryRecord.pageName("../../etc/passwd")
        #expect(odd.hasPrefix("x") && odd.hasSuffix(".html") && !odd.contains("/") && odd.count == 70)
    }

    @Test func aRecordPageEscapesEveryValue() throws {
        let json = try StageKit.JSONValue.parse(#"""
            {"id": "r1", "type": "<b>T</b>", "memo": "<img src=x onerror=alert(1)>", "change_tag": "3",
             "fields": {"<k>": "<v>", "list": ["<a>", "b"]}, "exif": {"make": "<Canon>"}, "assets": {}}
            """#)
        let record = try #require(GalleryRecord(json))
        let page = GalleryPages.record(record, .init(inGallery: ["r1": record], hasImage: { _ in true }))
        for raw in ["<img src=x", "<b>T", "<k>", "<v>", "<a>", "<Canon>"] { #expect(!page.contains(raw), "\(raw) unescaped") }
        #expect(page.contains("&lt;img src=x onerror=alert(1)&gt;") && page.contains("&lt;Canon&gt;"))
        #expect(!page.contains("<script"))
    }

    @Test func gpsIsShownOnlyWhereTheJobKeptIt() throws {
        func page(_ exif: String) throws -> String {
            let json = try StageKit.JSONValue.parse(#"{"id": "r1", "type": "Photo", "memo": "m", "exif": \#(exif)}"#)
            let record = try #require(GalleryRecord(json))
            return GalleryPages.record(record, .init(inGallery: [:], hasImage: { _ in true }))
        }
        let kept = try page(#"{"make": "Canon", "model": "EOS 40D", "orientation": 1, "gps": {"latitude": 43.4674, "longitude": 11.8851}}"#)
        #expect(kept.contains("GPS") && kept.contains("43.46740, 11.88510") && kept.contains("Canon EOS 40D"))
        let stripped = try page(#"{"make": "Canon", "model": "EOS 40D", "orientation": 1}"#)
        #expect(!stripped.contains("GPS") && stripped.contains("orientation"))
    }
}
