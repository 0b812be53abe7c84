import Foundation
import PhotomemoCore
import StageKit
import SQL
import Testing
@testable import Index

/// The trash (DESIGN.md, "Running for months"): a deleted record leaves every query, `get`
/// and duplicate check but keeps its assets until it is purged; restoring it brings it back
/// whole with a `create` change; the owner's (or an admin's) to restore or purge.
@Suite struct TrashTests {
    func asset(_ key: String, _ bytes: Int64 = 10) -> JSONValue { ["original": ["key": .string(key), "bytes": .int(bytes)]] }

    func memos(_ s: RecordStore, _ viewer: Viewer = .admin) throws -> [String] {
        try s.query(PredicateParser.parse("TRUEPREDICATE"), viewer: viewer).records.map(\.memo)
    }

    @Test(arguments: Engine.allCases) func aTrashedRecordLeavesQueriesKeepsItsAssetsAndComesBackWithACreate(_ engine: Engine) throws {
        try withStore(engine) { s in
            let first = try s.apply(input("k0", memo: "first", assets: asset("k0")), now: 1).record
            let r = try s.apply(input("k1", memo: "lunch receipt", fields: ["price": 12], sha: "p1", assets: asset("k1", 100)), now: 2).record
            _ = try s.apply(input("k2", memo: "last", assets: asset("k2")), now: 3)
            let d = try s.delete(r.id, viewer: .user("alice"), mode: .trash, now: 10)
            #expect(d.deleted == [r.id] && d.trashed == [r.id] && d.releasedAssets.isEmpty)
            #expect(d.photos.map(\.sha256) == ["p1"])
            #expect(try s.get(r.id, viewer: .admin) == nil && memos(s) == ["first", "last"])
            #expect(try s.query(PredicateParser.parse("memo CONTAINS \"receipt\""), viewer: .user("alice")).records.isEmpty)
            #expect(try s.query(PredicateParser.parse("price == 12"), viewer: .admin).records.isEmpty)
            #expect(try s.isReferenced("k1"))  // the collector leaves its object in the store
            // It still counts in alice's usage: its bytes are still stored.
            #expect(try s.usage(owner: "alice") == (3, 120))
            // A memo line naming it does not bring it back, nor does an update.
            var line = MemoJob(memo: "again", owner: "alice")
            line.record = r.id
            #expect(throws: RecordWriteError.notFound) {
                try s.apply(RecordInput(jobKey: "line", photoSHA256: nil, memo: line, assets: .emptyObject, exif: .emptyObject,
                                        width: nil, height: nil), now: 11)
            }
            #expect(throws: RecordWriteError.notFound) {
                try s.update(r.id, memo: "x", fields: [:], acl: nil, ifTag: nil, viewer: .admin, now: 11)
            }
            // The same bytes again make a record of their own: the trashed one is no duplicate target.
            let again = try s.apply(input("k1-again", memo: "new drop", sha: "p1", assets: asset("k1", 100)), now: 12)
            #expect(again.op == "create" && again.record.id != r.id)
            let seen = try #require(try s.getTrashed(r.id, viewer: .user("alice")))
            #expect(seen.record.memo == "lunch receipt" && seen.deletedAt == 10 && seen.trashedWith == r.id)
            #expect(try s.trashList(viewer: .user("alice"), limit: 10, cursor: nil).records.map(\.record.id) == [r.id])

            let restored = try s.restore(r.id, viewer: .user("alice"), now: 20)
            #expect(restored.map(\.id) == [r.id])
            let back = try #require(try s.get(r.id, viewer: .user("alice")))
            #expect(back.memo == "lunch receipt" && back.fields["price"] == 12 && back.created == 2 && back.assets == asset("k1", 100))
            #expect(try s.query(PredicateParser.parse("memo CONTAINS \"receipt\" AND price == 12"), viewer: .user("alice")).records.map(\.id) == [r.id])
            // It keeps its place in creation order.
            #expect(try memos(s) == ["first", "lunch receipt", "last", "new drop"])
            #expect(first.id != r.id)
            let ops = try s.changes(since: 0, limit: 100, viewer: .admin).filter { $0.recordID == r.id }.map(\.op)
            #expect(ops == ["create", "delete", "create"])
            #expect(try s.getTrashed(r.id, viewer: .admin) == nil && s.trashList(viewer: .admin, limit: 10, cursor: nil).records.isEmpty)
            #expect(try s.usage(owner: "alice") == (4, 220))
        }
    }

    @Test(arguments: Engine.allCases) func purgingReleasesTheAssetsOnlyAfterTheTrashTime(_ engine: Engine) throws {
        try withStore(engine) { s in
            let old = try s.apply(input("old", memo: "old", assets: asset("a-old")), now: 1).record
            let recent = try s.apply(input("recent", memo: "recent", assets: asset("a-recent")), now: 1).record
            _ = try s.apply(input("shares", memo: "shares a-old's bytes", owner: "bob", assets: asset("a-shared")), now: 1)
            _ = try s.delete(old.id, viewer: .admin, mode: .trash, now: 100)
            _ = try s.delete(recent.id, viewer: .admin, mode: .trash, now: 200)
            let p = try s.purgeTrash(deletedBefore: 150, limit: 10, now: 300)
            #expect(p.purged == 1 && p.released == ["a-old"])
            #expect(try s.releasedAssets(limit: 10) == ["a-old"] && !s.isReferenced("a-old") && s.isReferenced("a-recent"))
            #expect(try s.getTrashed(old.id, viewer: .admin) == nil && s.getTrashed(recent.id, viewer: .admin) != nil)
            #expect(throws: RecordWriteError.notFound) { try s.restore(old.id, viewer: .admin, now: 301) }
            #expect(try s.usage(owner: "alice") == (1, 10))
            // In batches: one at a time here.
            #expect(try s.purgeTrash(deletedBefore: 1000, limit: 1, now: 301).purged == 1)
            #expect(try s.purgeTrash(deletedBefore: 1000, limit: 1, now: 301).purged == 0)
            #expect(try s.usage(owner: "alice") == (0, 0))
        }
    }

    @Test(arguments: Engine.allCases) func onlyTheOwnerOrAnAdminRestoresOrPurgesAndOthersDoNotSeeIt(_ engine: Engine) throws {
        try withStore(engine) { s in
            let mine = try s.apply(input("a1", memo: "alice's", assets: asset("a1")), now: 1).record
            let shared = try s.apply(input("a2", memo: "bob may write", assets: asset("a2")), now: 1).record
            _ = try s.update(shared.id, memo: nil, fields: [:], acl: ACL(writers: ["bob"]), ifTag: nil, viewer: .user("alice"), now: 2)
            // bob may delete what he may write, but not purge what is alice's.
            #expect(throws: RecordWriteError.forbidden) { try s.delete(shared.id, viewer: .user("bob"), mode: .purge, now: 3) }
            _ = try s.delete(shared.id, viewer: .user("bob"), mode: .trash, now: 3)
            _ = try s.delete(mine.id, viewer: .user("alice"), mode: .trash, now: 3)
            // bob sees the record he could read in the trash, not alice's own; carol sees nothing.
            #expect(try s.trashList(viewer: .user("bob"), limit: 10, cursor: nil).records.map(\.record.id) == [shared.id])
            #expect(try s.trashList(viewer: .user("carol"), limit: 10, cursor: nil).records.isEmpty)
            #expect(try s.getTrashed(mine.id, viewer: .user("bob")) == nil)
            #expect(throws: RecordWriteError.notFound) { try s.restore(mine.id, viewer: .user("bob"), now: 4) }
            #expect(throws: RecordWriteError.forbidden) { try s.restore(shared.id, viewer: .user("bob"), now: 4) }
            #expect(throws: RecordWriteError.notFound) { try s.delete(mine.id, viewer: .user("bob"), mode: .purge, now: 4) }
            #expect(throws: RecordWriteError.forbidden) { try s.delete(shared.id, viewer: .user("bob"), mode: .purge, now: 4) }
            // alice empties hers from the trash at once; its object is released.
            let purged = try s.delete(mine.id, viewer: .user("alice"), mode: .purge, now: 5)
            #expect(purged.deleted == [mine.id] && purged.releasedAssets == ["a1"])
            #expect(try s.getTrashed(mine.id, viewer: .admin) == nil)
            #expect(try s.restore(shared.id, viewer: .admin, now: 6).map(\.id) == [shared.id])
            // `delete --purge` of a live record of one's own skips the trash.
            let third = try s.apply(input("a3", memo: "third", assets: asset("a3")), now: 7).record
            let d = try s.delete(third.id, viewer: .user("alice"), mode: .purge, now: 8)
            #expect(try d.trashed.isEmpty && d.releasedAssets == ["a3"] && s.getTrashed(third.id, viewer: .admin) == nil)
        }
    }

    /// A trashed restaurant trashes the photos that refer to it with deleteSelf; restoring
    /// it brings them back.
    @Test(arguments: Engine.allCases) func aCascadeGoesToTheTrashAndComesBackTogether(_ engine: Engine) throws {
        try withStore(engine) { s in
            let place = try s.apply(input("place", type: "Restaurant", memo: "place", assets: asset("pl")), now: 1).record
            let ref: [String: JSONValue] = ["restaurant": ["ref": .string(place.id), "action": "deleteSelf"]]
            let p1 = try s.apply(input("p1", type: "Photo", memo: "p1", fields: ref, assets: asset("p1")), now: 2).record
            let p2 = try s.apply(input("p2", type: "Photo", memo: "p2", fields: ref, assets: asset("p2")), now: 3).record
            let d = try s.delete(place.id, viewer: .user("alice"), mode: .trash, now: 10)
            #expect(Set(d.trashed) == [place.id, p1.id, p2.id] && d.releasedAssets.isEmpty)
            #expect(try memos(s).isEmpty)
            #expect(try s.getTrashed(p1.id, viewer: .admin)?.trashedWith == place.id)
            let restored = try s.restore(place.id, viewer: .user("alice"), now: 20)
            #expect(Set(restored.map(\.id)) == [place.id, p1.id, p2.id])
            #expect(try memos(s) == ["place", "p1", "p2"])
            let photos = try s.query(PredicateParser.parse("TRUEPREDICATE"), type: "Photo", sort: [], limit: 10, cursor: nil, viewer: .user("alice")).records
            #expect(photos.count == 2)
            #expect(try s.danglingReferences(of: photos[0], viewer: .user("alice")).isEmpty)
        }
    }
}
