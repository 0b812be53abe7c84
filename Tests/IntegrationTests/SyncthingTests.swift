import Foundation
import StageKit
import TestSupport
import Testing

/// Syncthing from a phone into the inbox (issue #26), two real instances on loopback: the
/// phone shares its camera folder send-only, the server receives it receive-only into the
/// inbox. Syncthing writes `.syncthing.NAME.tmp` and renames it in; the photos the inbox
/// consumes are local changes of a receive-only folder, which never go back to the phone.
struct SyncthingTests {
    static let photos = ["orientation_landscape_4.jpg", "orientation_portrait_7.jpg", "Nikon_D70.jpg", "exif-org_nikon-e950.jpg"]

    /// Syncs `t.source` (the phone's folder) into `t.d`'s inbox, waits until every photo is
    /// stored and checks what must hold however the inbox keeps its originals: one record
    /// per photo, and the phone's folder exactly as it was.
    func syncFromPhone(_ t: ToolDelivery) throws -> SyncthingPair {
        let phoneBefore = ToolDelivery.snapshot(t.source)
        let pair = try SyncthingPair(phoneFolder: t.source, serverFolder: t.inbox)
        pair.scanPhone()
        do {
            try t.expectEachPhotoStoredOnce(timeout: 40)
        } catch {
            Issue.record("Syncthing logs:\n\(pair.logs)")
            throw error
        }
        #expect(ToolDelivery.snapshot(t.source) == phoneBefore, "the phone's folder changed")
        return pair
    }

    @Test func syncthingFromThePhoneIntoTheInbox() throws {
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree)
        let pair = try syncFromPhone(t)
        #expect(t.inboxPhotos().isEmpty, "stored photos leave a consuming inbox: \(t.inboxPhotos())")
        // The phone is still in sync (nothing it needs), and its folder as it was after the
        // server's rescans have seen the photos gone.
        Thread.sleep(forTimeInterval: 1.5)
        let status = pair.rest(.phone, "GET", "/rest/db/status?folder=photos") ?? ""
        #expect(status.contains("\"needFiles\": 0") || status.contains("\"needFiles\":0"), "\(status)")
        #expect(ToolDelivery.snapshot(t.source) == t.hashes, "the phone's folder changed")
    }

    /// The recipe in docs/inbox.md (issue #26's scenario): the phone's camera roll — photos in two
    /// folders, a Live Photo's `.MOV`, a JSON and an XMP memo sidecar — into a `keep` inbox.
    /// Both folders stay as the phone has them; each photo is one record with its sidecar's
    /// memo; then an edit on the phone (new bytes for a photo, a sidecar rewritten) updates
    /// the same records.
    @Test func syncthingIntoAKeepInboxThenAnEditOnThePhone() throws {
        let t = try ToolDelivery(Self.photos, folders: Array(ToolDelivery.tree.dropFirst()), stages: ToolDelivery.keepStages)
        let (edited, withJSON, withXMP) = (t.photos[0], t.photos[2], t.photos[1])  // landscape_4, Nikon_D70, portrait_7
        func write(_ text: String, _ path: String) throws {
            try text.write(toFile: t.source + "/" + path, atomically: true, encoding: .utf8)
            chmod(t.source + "/" + path, 0o644)
        }
        try write(#"{"memo": "bought at the market", "fields": {"code": "A-1"}}"#, withJSON + ".json")
        try write(WhoMayDoWhatTests.lightroomXMP, String(withXMP.dropLast(4)) + ".xmp")
        try write("not a photo: a Live Photo's video", "DCIM/100APPLE/IMG_0001.MOV")
        let pair = try syncFromPhone(t)
        func record(_ source: String) throws -> JSONValue? { try t.records().first { $0["source"]?.stringValue == source } }
        try t.d.waitUntil("both sidecars' memos are on their records", timeout: 30) {
            try record(withJSON)?["memo"] == "bought at the market" && record(withXMP)?["memo"] == "lunch receipt"
        }
        #expect(try record(withJSON)?["fields"]?["code"] == "A-1")
        #expect(try record(withXMP)?["fields"] == .object(["title": "Sakura", "tags": .array(["food", "receipts"]), "rating": 4]))
        let inbox = try json(t.d, ["inbox"])["skipped"]?.arrayValue ?? []
        #expect(inbox.contains { $0["name"] == "DCIM/100APPLE/IMG_0001.MOV" && $0["reason"] == "not a photo (.mov)" }, "\(inbox)")
        let phone = ToolDelivery.snapshot(t.source)
        #expect(phone.count == t.photos.count + 3 && t.inboxPhotos() == phone, "the inbox is not the phone's tree: \(t.inboxPhotos())")
        let ids = Dictionary(uniqueKeysWithValues: try t.records().map { ($0["source"]?.stringValue ?? "", $0["id"]?.stringValue ?? "") })

        // The edit: a photo's new bytes and a rewritten sidecar, each renamed in on the phone.
        let scratch = t.d.root + "/edit"
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("Canon_40D.jpg").path, toPath: scratch)
        chmod(scratch, 0o644)
        #expect(rename(scratch, t.source + "/" + edited) == 0)
        try write(#"{"memo": "bought at the market, two left", "fields": {"code": "A-2"}}"#, withJSON + ".json")
        let canon = try KeepOriginalsTests.sha("Canon_40D.jpg")
        pair.scanPhone()
        try t.d.waitUntil("the edits are on the same records", timeout: 40) {
            try record(edited)?["sha256"]?.stringValue == canon && record(withJSON)?["memo"] == "bought at the market, two left"
        }
        try t.d.waitUntil("no job left to run", timeout: 20) {
            let c = try t.d.stateCounts()
            return (c["queued"] ?? 0) + (c["running"] ?? 0) + (c["waiting"] ?? 0) == 0
        }
        let after = try t.records()
        #expect(Dictionary(uniqueKeysWithValues: after.map { ($0["source"]?.stringValue ?? "", $0["id"]?.stringValue ?? "") }) == ids)
        #expect(try record(withJSON)?["fields"]?["code"] == "A-2")
        let feed = try json(t.d, ["changes", "--since", "0"])["changes"]?.arrayValue ?? []
        #expect(feed.filter { $0["op"] == "create" }.count == t.photos.count, "\(feed)")
        #expect(feed.contains { $0["op"] == "update" && $0["record"]?["id"]?.stringValue == ids[edited] && $0["record"]?["sha256"]?.stringValue == canon }, "\(feed)")
        #expect(try t.d.jobs().allSatisfy { $0.state == "done" } && t.d.quarantined().isEmpty)
        let phoneEdited = ToolDelivery.snapshot(t.source)
        #expect(phoneEdited[edited] == canon && t.inboxPhotos() == phoneEdited, "the inbox is not the phone's tree: \(t.inboxPhotos())")
    }
}
