import Foundation
import PhotomemoCore
import TestSupport
import Testing

/// Issue 26, memo sidecars, on a real daemon with real uids (alice = "daemon", bob = "nobody"):
/// a `NAME.EXT.json` or `NAME.xmp` beside a photo is its memo, whenever it arrives.
extension WhoMayDoWhatTests {
    /// Jobs/photo-memo.json, with the upload stage keeping originals (a sync tool's folder).
    func keepingOriginals() throws -> String {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8)
        let keep = text.replacingOccurrences(of: #"{"use": "upload",   "with": {}}"#, with: #"{"use": "upload", "with": {"keep_originals": "keep"}}"#)
        #expect(keep != text)
        return keep
    }

    /// Puts `text` in the inbox as `user`'s file `name`, as a sync tool does (a temporary
    /// name, then a rename).
    func put(_ user: String, _ d: DaemonHarness, _ text: String, as name: String) throws {
        let source = d.root + "/sidecar-\(UInt32.random(in: 0...UInt32.max))"
        try text.write(toFile: source, atomically: false, encoding: .utf8)
        chmod(source, 0o644)
        let (folder, base) = MemoSidecar.split(name)
        #expect(try DaemonHarness.run(as: user, ["/bin/cp", source, "\(d.home)/inbox/\(folder).\(base).part"]).0 == 0)
        #expect(try DaemonHarness.run(as: user, ["/bin/mv", "\(d.home)/inbox/\(folder).\(base).part", "\(d.home)/inbox/\(name)"]).0 == 0)
    }

    func inboxReasons(_ user: String, _ d: DaemonHarness) throws -> [String: String] {
        var out: [String: String] = [:]
        for e in try cliJSON(user, d, ["inbox"])["skipped"]?.arrayValue ?? [] {
            if let n = e["name"]?.stringValue { out[n] = e["reason"]?.stringValue }
        }
        return out
    }

    static let lightroomXMP = """
        <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
          <rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmp:Rating="4">
           <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Sakura</rdf:li></rdf:Alt></dc:title>
           <dc:description><rdf:Alt><rdf:li xml:lang="x-default">lunch receipt</rdf:li></rdf:Alt></dc:description>
           <dc:subject><rdf:Bag><rdf:li>food</rdf:li><rdf:li>receipts</rdf:li></rdf:Bag></dc:subject>
          </rdf:Description></rdf:RDF></x:xmpmeta>
        """

    /// Before the photo: it waits (listed by `photomemo inbox`), and the photo's one job
    /// makes one record with its type, fields and memo. With the photo (an XMP written just
    /// before it): the same. Both leave the inbox with their photos (`delete`).
    @Test func aSidecarBeforeOrWithItsPhotoMakesOneRecordWithItsMemo() throws {
        let d = try start()
        let inbox = d.home + "/inbox"
        try put(alice, d, #"{"memo": "house on the hill", "type": "Houses", "fields": {"price": 1200, "tags": ["a"]}}"#, as: "IMG_A.jpg.json")
        try d.waitUntil("the sidecar is listed as waiting", timeout: 10) {
            try inboxReasons(alice, d)["IMG_A.jpg.json"] == "memo sidecar waiting for its photo IMG_A.jpg"
        }
        try drop(alice, d, "Canon_40D.jpg", as: "IMG_A.jpg")
        try put(alice, d, Self.lightroomXMP, as: "IMG_B.xmp")
        try drop(alice, d, "Nikon_D70.jpg", as: "IMG_B.jpg")
        try d.waitIdle(jobs: 2, timeout: 60)
        let jobs = try d.jobs()
        #expect(jobs.allSatisfy { $0.state == "done" }, "\(jobs.map { ($0.photo, $0.state, $0.error) })")
        let houses = try records(alice, d, "Houses")
        #expect(houses.count == 1 && houses.first?["memo"] == "house on the hill", "\(houses)")
        #expect(houses.first?["fields"]?["price"] == 1200 && houses.first?["fields"]?["tags"] == .array(["a"]))
        let photos = try records(alice, d, "Photo")
        #expect(photos.count == 1 && photos.first?["memo"] == "lunch receipt", "\(photos)")
        #expect(photos.first?["fields"] == .object(["title": "Sakura", "tags": .array(["food", "receipts"]), "rating": 4]))
        try d.waitUntil("the sidecars left with their photos", timeout: 10) {
            try FileManager.default.contentsOfDirectory(atPath: inbox).isEmpty
        }
        #expect(d.quarantined().isEmpty)
    }

    /// After the photo's record exists (a `keep` inbox, the photo stays): the sidecar is an
    /// update of that record, and so is each edit of it. Nothing in the inbox is touched.
    @Test func aSidecarAfterItsPhotoOrEditedLaterUpdatesTheRecord() throws {
        let d = try start(stages: try keepingOriginals())
        let inbox = d.home + "/inbox"
        try drop(alice, d, "Canon_40D.jpg", as: "IMG_C.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        let id = try #require(try records(alice, d).first?["id"]?.stringValue)
        try put(alice, d, #"{"memo": "first words", "fields": {"code": "A-1"}}"#, as: "IMG_C.json")
        try d.waitUntil("the record has the sidecar's memo", timeout: 30) {
            try records(alice, d).first?["memo"] == "first words"
        }
        try put(alice, d, #"{"memo": "second thoughts", "fields": {"code": "A-2"}}"#, as: "IMG_C.json")
        try d.waitUntil("the record has the edited sidecar's memo", timeout: 30) {
            try records(alice, d).first?["memo"] == "second thoughts"
        }
        let all = try records(alice, d)
        #expect(all.count == 1 && all.first?["id"]?.stringValue == id && all.first?["fields"]?["code"] == "A-2", "\(all)")
        try d.waitIdle(jobs: 3, timeout: 30)
        #expect(try Set(FileManager.default.contentsOfDirectory(atPath: inbox)) == ["IMG_C.jpg", "IMG_C.json"])
        #expect(try inboxReasons(alice, d)["IMG_C.json"] == "memo sidecar of IMG_C.jpg")
    }

    /// A bad sidecar fails its photo's job with a reason naming it; the photo stays in the
    /// inbox, unquarantined, and once the sidecar is fixed the photo is taken with it.
    @Test func aBadSidecarFailsItsPhotosJobNamingItUntilFixed() throws {
        let d = try start()
        let inbox = d.home + "/inbox"
        try put(alice, d, #"{"memo": "x", "fields": {"when": null}}"#, as: "IMG_E.jpg.json")
        try drop(alice, d, "Canon_40D.jpg", as: "IMG_E.jpg")
        try d.waitIdle(jobs: 1, timeout: 30)
        let failed = try #require(try d.jobs().first)
        #expect(failed.state == "failed" && failed.error?.hasPrefix("memo sidecar IMG_E.jpg.json: field \"when\" must be a string") == true,
                "\(failed)")
        #expect(FileManager.default.fileExists(atPath: inbox + "/IMG_E.jpg") && d.quarantined().isEmpty)
        try put(alice, d, #"{"memo": "fixed", "fields": {"when": "noon"}}"#, as: "IMG_E.jpg.json")
        try d.waitUntil("the photo is a record with the fixed memo", timeout: 60) {
            try records(alice, d).first?["memo"] == "fixed"
        }
        #expect(try records(alice, d).count == 1)
        // 100 MB (sparse): refused by its size, unread; the photo's job names it.
        #expect(try DaemonHarness.run(as: alice, ["/usr/bin/truncate", "-s", "100M", inbox + "/IMG_H.jpg.json"]).0 == 0)
        try drop(alice, d, "Nikon_D70.jpg", as: "IMG_H.jpg")
        try d.waitIdle(jobs: 3, timeout: 30)
        let big = try #require(try d.jobs().last)
        #expect(big.state == "failed" && big.error == "memo sidecar IMG_H.jpg.json: is 104857600 bytes, over the 1048576 a memo sidecar may have",
                "\(big)")
    }

    /// A sidecar counts only when its owner owns the photo: bob's file beside alice's photo
    /// is no memo of hers; it is left alone and listed with why.
    @Test func anotherOwnersSidecarIsIgnoredAndListed() throws {
        let d = try start()
        let inbox = d.home + "/inbox"
        try put(bob, d, #"{"memo": "bob was here", "type": "Pwned"}"#, as: "IMG_F.jpg.json")
        try drop(alice, d, "Canon_40D.jpg", as: "IMG_F.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        let mine = try records(alice, d)
        #expect(mine.count == 1 && mine.first?["type"] == "Photo" && mine.first?["memo"] == "", "\(mine)")
        #expect(FileManager.default.fileExists(atPath: inbox + "/IMG_F.jpg.json"), "bob's sidecar was released with alice's photo")
        try drop(alice, d, "Nikon_D70.jpg", as: "IMG_G.jpg")  // alice's photo stays a moment: bob's sidecar for it
        try put(bob, d, #"{"memo": "bob again"}"#, as: "IMG_G.jpg.json")
        try d.waitIdle(jobs: 2, timeout: 60)
        #expect(try records(alice, d).allSatisfy { $0["memo"] == "" })
        #expect(try d.jobs().count == 2)
        try d.waitUntil("bob's sidecar is listed as his, waiting", timeout: 10) {
            try inboxReasons(bob, d)["IMG_F.jpg.json"] == "memo sidecar waiting for its photo IMG_F.jpg"
        }
    }
}
