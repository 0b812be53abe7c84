import Foundation
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
    /// per photo, and the phone's folder exactly as it was. A `keep` inbox variant (the
    /// folder the README recommends for two-way sync tools) calls this with a `keep` job
    /// definition and then expects `t.inboxPhotos()` to equal `t.hashes` too.
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
        let t = try ToolDelivery(Self.photos)
        let pair = try syncFromPhone(t)
        #expect(t.inboxPhotos().isEmpty, "stored photos leave a consuming inbox: \(t.inboxPhotos())")
        // The phone is still in sync (nothing it needs), and its folder as it was after the
        // server's rescans have seen the photos gone.
        Thread.sleep(forTimeInterval: 1.5)
        let status = pair.rest(.phone, "GET", "/rest/db/status?folder=photos") ?? ""
        #expect(status.contains("\"needFiles\": 0") || status.contains("\"needFiles\":0"), "\(status)")
        #expect(ToolDelivery.snapshot(t.source) == t.hashes, "the phone's folder changed")
    }
}
