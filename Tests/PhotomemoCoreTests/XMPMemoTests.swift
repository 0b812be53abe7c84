import Foundation
import Testing
@testable import PhotomemoCore
@testable import StageKit

/// XMP sidecars as the tools that write them shape them, and as an attacker would.
@Suite struct XMPMemoTests {
    func memo(_ xmp: String) throws -> MemoJob {
        try MemoSidecar.parse(Array(xmp.utf8), xmp: true, photo: "IMG_0001.jpg", owner: "alice")
    }

    /// Lightroom Classic: most properties as attributes of rdf:Description, Rating among
    /// them; dc properties as elements (language alternatives, a Bag of keywords).
    @Test func lightroom() throws {
        let m = try memo("""
            <x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="Adobe XMP Core 7.0-c000 1.000000, 0000/00/00-00:00:00        ">
             <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
              <rdf:Description rdf:about=""
                xmlns:xmp="http://ns.adobe.com/xap/1.0/"
                xmlns:tiff="http://ns.adobe.com/tiff/1.0/"
                xmlns:dc="http://purl.org/dc/elements/1.1/"
                xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/"
               xmp:ModifyDate="2026-11-29T12:00:00+09:00"
               xmp:Rating="4"
               crs:Version="15.0"
               crs:Exposure2012="+0.35">
               <dc:title>
                <rdf:Alt>
                 <rdf:li xml:lang="x-default">Lunch at Sakura</rdf:li>
                </rdf:Alt>
               </dc:title>
               <dc:description>
                <rdf:Alt>
                 <rdf:li xml:lang="x-default">lunch receipt &amp; tip</rdf:li>
                </rdf:Alt>
               </dc:description>
               <dc:subject>
                <rdf:Bag>
                 <rdf:li>food</rdf:li>
                 <rdf:li>receipts</rdf:li>
                </rdf:Bag>
               </dc:subject>
              </rdf:Description>
             </rdf:RDF>
            </x:xmpmeta>
            """)
        #expect(m.memo == "lunch receipt & tip")
        #expect(m.fields == ["title": .string("Lunch at Sakura"), "tags": .array([.string("food"), .string("receipts")]), "rating": .int(4)])
        #expect(m.type == "Photo" && m.photo == "IMG_0001.jpg" && m.owner == "alice")
    }

    /// darktable: an XML declaration, its own history (rdf:li with attributes only), the
    /// keywords as a Seq.
    @Test func darktable() throws {
        let m = try memo("""
            <?xml version="1.0" encoding="UTF-8"?>
            <x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
             <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
              <rdf:Description rdf:about=""
                xmlns:exif="http://ns.adobe.com/exif/1.0/"
                xmlns:xmp="http://ns.adobe.com/xap/1.0/"
                xmlns:xmpMM="http://ns.adobe.com/xap/1.0/mm/"
                xmlns:darktable="http://darktable.sf.net/"
                xmlns:dc="http://purl.org/dc/elements/1.1/"
               exif:DateTimeOriginal="2026:11:29 12:00:00"
               xmp:Rating="2"
               xmpMM:DerivedFrom="IMG_0001.jpg"
               darktable:xmp_version="5"
               darktable:history_end="1">
               <darktable:masks_history><rdf:Seq/></darktable:masks_history>
               <darktable:history>
                <rdf:Seq>
                 <rdf:li darktable:num="0" darktable:operation="flip" darktable:enabled="1" darktable:params="ffffffff" darktable:multi_name=""/>
                </rdf:Seq>
               </darktable:history>
               <dc:description><rdf:Alt><rdf:li xml:lang="x-default">beach, day two</rdf:li></rdf:Alt></dc:description>
               <dc:subject>
                <rdf:Seq>
                 <rdf:li>darktable|format|jpg</rdf:li>
                 <rdf:li>beach</rdf:li>
                </rdf:Seq>
               </dc:subject>
              </rdf:Description>
             </rdf:RDF>
            </x:xmpmeta>
            """)
        #expect(m.memo == "beach, day two")
        #expect(m.fields == ["tags": .array([.string("darktable|format|jpg"), .string("beach")]), "rating": .int(2)])
    }

    /// digiKam (Exiv2): an xpacket wrapper with a BOM in it, several languages where the
    /// x-default one is not first, another tool's Rating beside xmp:Rating.
    @Test func digiKam() throws {
        let m = try memo("""
            <?xpacket begin="\u{FEFF}" id="W5M0MpCehiHzreSzNTczkc9d"?>
            <x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
             <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
              <rdf:Description rdf:about=""
                xmlns:xmp="http://ns.adobe.com/xap/1.0/"
                xmlns:digiKam="http://www.digikam.org/ns/1.0/"
                xmlns:MicrosoftPhoto="http://ns.microsoft.com/photo/1.0/"
                xmlns:dc="http://purl.org/dc/elements/1.1/"
               MicrosoftPhoto:Rating="99"
               xmp:Rating="5">
               <digiKam:TagsList><rdf:Seq><rdf:li>Places/Tokyo</rdf:li></rdf:Seq></digiKam:TagsList>
               <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Tokyo tower</rdf:li><rdf:li xml:lang="ja-JP">東京タワー</rdf:li></rdf:Alt></dc:title>
               <dc:description><rdf:Alt><rdf:li xml:lang="ja-JP">夜景</rdf:li><rdf:li xml:lang="x-default">night view</rdf:li></rdf:Alt></dc:description>
               <dc:subject><rdf:Bag><rdf:li>Tokyo</rdf:li></rdf:Bag></dc:subject>
              </rdf:Description>
             </rdf:RDF>
            </x:xmpmeta>
            <?xpacket end="w"?>
            """)
        #expect(m.memo == "night view")
        #expect(m.fields == ["title": .string("Tokyo tower"), "tags": .array([.string("Tokyo")]), "rating": .int(5)])
    }

    /// Apple Photos' export: title and description as plain text, Rating an element.
    @Test func applePhotosExport() throws {
        let m = try memo("""
            <x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 6.0.0">
               <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
                  <rdf:Description rdf:about=""
                        xmlns:dc="http://purl.org/dc/elements/1.1/"
                        xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"
                        xmlns:exif="http://ns.adobe.com/exif/1.0/"
                        xmlns:xmp="http://ns.adobe.com/xap/1.0/">
                     <dc:title>Receipt</dc:title>
                     <dc:description>Coffee with Ken</dc:description>
                     <dc:subject>
                        <rdf:Seq>
                           <rdf:li>coffee</rdf:li>
                           <rdf:li>work</rdf:li>
                        </rdf:Seq>
                     </dc:subject>
                     <xmp:Rating>3</xmp:Rating>
                     <photoshop:DateCreated>2026-11-29T12:00:00+09:00</photoshop:DateCreated>
                     <exif:GPSLatitude>35,40.5N</exif:GPSLatitude>
                  </rdf:Description>
               </rdf:RDF>
            </x:xmpmeta>
            """)
        #expect(m.memo == "Coffee with Ken")
        #expect(m.fields == ["title": .string("Receipt"), "tags": .array([.string("coffee"), .string("work")]), "rating": .int(3)])
    }

    /// Matched by namespace URI: Dublin Core under another prefix counts, `dc:` bound to
    /// another namespace does not.
    @Test func namespacesNotPrefixesDecide() throws {
        let m = try memo("""
            <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
              <rdf:Description xmlns:dc="http://example.com/not-dublin-core/" xmlns:purl="http://purl.org/dc/elements/1.1/"
                  xmlns:ap="http://ns.adobe.com/xap/1.0/" xmlns:xmp="http://example.com/other/" xmp:Rating="1" ap:Rating="3.0">
                <dc:description>not this</dc:description>
                <purl:description>this</purl:description>
              </rdf:Description></rdf:RDF></x:xmpmeta>
            """)
        #expect(m.memo == "this")
        #expect(m.fields == ["rating": .int(3)])
    }

    @Test func aFileWithNoneOfThePropertiesIsAnEmptyPhotoMemo() throws {
        let m = try memo(#"<x:xmpmeta xmlns:x="adobe:ns:meta/"/>"#)
        #expect(m.memo == "" && m.fields.isEmpty && m.type == "Photo")
    }

    @Test(arguments: [
        ("<x:xmpmeta", "not well-formed"),
        (#"<a xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="four"/>"#, "xmp:Rating \"four\" is not an integer"),
        (#"<a xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:description>a&#0;b</dc:description></a>"#, "not well-formed"),
    ])
    func badDocumentsAreBadJobs(_ xmp: String, _ message: String) {
        #expect {
            try memo(xmp)
        } throws: { e in
            (e as? PhotomemoError)?.code == .badJob && (e as? PhotomemoError)?.message.contains(message) == true
        }
    }

    /// Billion laughs: refused at once, before any entity is declared, let alone expanded.
    @Test func billionLaughsIsRefusedQuickly() throws {
        var decl = #"<!ENTITY lol0 "lol">"#
        for i in 1...9 { decl += "<!ENTITY lol\(i) \"" + String(repeating: "&lol\(i - 1);", count: 10) + "\">" }
        let xmp = """
            <?xml version="1.0"?><!DOCTYPE x:xmpmeta [\(decl)]>
            <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
            <rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/" dc:title="&lol9;"><dc:description>&lol9;</dc:description>
            </rdf:Description></rdf:RDF></x:xmpmeta>
            """
        let start = Date()
        #expect(throws: PhotomemoError.self) { try memo(xmp) }
        #expect(Date().timeIntervalSince(start) < 0.5)
    }

    /// An external entity naming a local file (or a URL) never puts its text in a field:
    /// UTF-8 or disguised as UTF-16, the document is refused.
    @Test func externalEntitiesNeverReachAField() throws {
        let xmp = """
            <?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd"><!ENTITY net SYSTEM "http://127.0.0.1:9/x">]>
            <x xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:description>&xxe;&net;</dc:description><dc:title>&xxe;</dc:title></x>
            """
        #expect(throws: PhotomemoError.self) { try memo(xmp) }
        // UTF-16LE without a BOM is valid UTF-8 byte by byte (NULs between the letters).
        let utf16 = Array(xmp.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        #expect(throws: PhotomemoError.self) { try MemoSidecar.parse(utf16, xmp: true, photo: "a.jpg", owner: nil) }
        let asDeclared = Array(xmp.replacingOccurrences(of: "<?xml version=\"1.0\"?>", with: "<?xml version=\"1.0\" encoding=\"UTF-16\"?>").utf8)
        #expect(throws: PhotomemoError.self) { try MemoSidecar.parse(asDeclared, xmp: true, photo: "a.jpg", owner: nil) }
        // A DOCTYPE with no entities at all is refused too: an XMP packet has no use for one.
        #expect(throws: PhotomemoError.self) { try memo(#"<!DOCTYPE x><x/>"#) }
    }
}
