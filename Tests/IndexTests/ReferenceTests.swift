import Foundation
import StageKit
import SQL
import Testing
@testable import Index

/// References across owners (issue 24, item 4): a reference names only a record its writer
/// may read, and a `deleteSelf` cascade deletes only what the deleting user may write.
@Suite struct ReferenceTests {
    static func ref(_ id: String) -> [String: JSONValue] { ["place": ["ref": .string(id), "action": "deleteSelf"]] }

    @Test(arguments: Engine.allCases) func aReferenceNamesOnlyARecordItsWriterMayRead(_ engine: Engine) throws {
        try withStore(engine) { s in
            let (hidden, _) = try s.apply(input("a1", memo: "alice private", owner: "alice"))
            let (shown, _) = try s.apply(input("a2", memo: "alice public", owner: "alice"))
            _ = try s.update(shown.id, memo: nil, fields: [:], acl: ACL(publicRead: true), ifTag: nil, viewer: .user("alice"))
            // Someone else's private record and a record that does not exist get the same answer.
            for target in [hidden.id, "r0000000000000000000000"] {
                #expect(throws: RecordWriteError.badReference(field: "place", record: target)) {
                    try s.apply(input("b-\(target)", fields: Self.ref(target), owner: "bob"))
                }
            }
            let (bobs, _) = try s.apply(input("b2", memo: "near alice's", fields: Self.ref(shown.id), owner: "bob"))
            #expect(throws: RecordWriteError.badReference(field: "place", record: hidden.id)) {
                try s.update(bobs.id, memo: nil, fields: Self.ref(hidden.id), ifTag: nil, viewer: .user("bob"))
            }
            #expect(try s.get(bobs.id, viewer: .admin)?.fields["place"]?["ref"] == .string(shown.id))  // unchanged
            // Alice may point at her own; an admin's job at any record that exists.
            _ = try s.apply(input("a3", fields: Self.ref(hidden.id), owner: "alice"))
            _ = try s.apply(input("admin", fields: Self.ref(hidden.id), owner: nil))
            #expect(throws: RecordWriteError.badReference(field: "place", record: "rnothing")) {
                try s.apply(input("admin2", fields: Self.ref("rnothing"), owner: nil))
            }
        }
    }

    @Test(arguments: Engine.allCases) func aCascadeDeletesOnlyWhatTheDeleterMayWriteAndTheRestDangle(_ engine: Engine) throws {
        try withStore(engine) { s in
            let (place, _) = try s.apply(input("b1", type: "Restaurant", memo: "bob's public place", owner: "bob"))
            _ = try s.update(place.id, memo: nil, fields: [:], acl: ACL(publicRead: true), ifTag: nil, viewer: .user("bob"))
            let (alices, _) = try s.apply(input("a1", memo: "alice's visit", fields: Self.ref(place.id), owner: "alice"))
            let (shared, _) = try s.apply(input("a2", memo: "alice's, bob may write", fields: Self.ref(place.id), owner: "alice"))
            _ = try s.update(shared.id, memo: nil, fields: [:], acl: ACL(writers: ["bob"]), ifTag: nil, viewer: .user("alice"))
            let (bobs, _) = try s.apply(input("b2", memo: "bob's visit", fields: Self.ref(place.id), owner: "bob"))
            let (deleted, _, _) = try s.delete(place.id, viewer: .user("bob"))
            #expect(Set(deleted) == [place.id, shared.id, bobs.id])  // never alice's own id
            for table in ["record_readers", "record_fields"] + (engine == .sqlite ? ["record_tokens"] : []) {
                #expect(try s.db.queryOne("SELECT count(*) FROM \(table) WHERE record_id = ?", [.text(place.id)])?.int(0) == 0, "\(table)")
            }
            let kept = try #require(try s.get(alices.id, viewer: .user("alice")))
            #expect(kept.fields["place"]?["ref"] == .string(place.id))
            #expect(try s.danglingReferences(of: kept, viewer: .user("alice")) == ["place"])
            // A target that exists but is not the viewer's to read looks the same.
            let (secret, _) = try s.apply(input("c1", memo: "carol's", owner: "carol"))
            let (open, _) = try s.apply(input("c2", fields: Self.ref(secret.id), owner: "carol"))
            _ = try s.update(open.id, memo: nil, fields: [:], acl: ACL(readers: ["alice"]), ifTag: nil, viewer: .user("carol"))
            let seen = try #require(try s.get(open.id, viewer: .user("alice")))
            #expect(try s.danglingReferences(of: seen, viewer: .user("alice")) == ["place"])
            #expect(try s.danglingReferences(of: seen, viewer: .user("carol")).isEmpty)
        }
    }
}
