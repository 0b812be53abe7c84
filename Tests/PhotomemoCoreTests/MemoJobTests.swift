import Foundation
import Testing
@testable import PhotomemoCore
@testable import StageKit

@Suite struct MemoJobTests {
    func parse(_ s: String) throws -> MemoJob { try MemoJob.parse(line: Array(s.utf8)) }

    @Test func parsesAFullLine() throws {
        let m = try parse(#"{"photo":"IMG_0001.jpg","memo":"lunch receipt","type":"Houses","fields":{"code":"A-001","salesPrice":1200,"costRate":0.35,"tags":["a","b"],"parent":{"ref":"r1","action":"deleteSelf"}},"owner":"alice","key":"k1"}"#)
        #expect(m.photo == "IMG_0001.jpg")
        #expect(m.memo == "lunch receipt")
        #expect(m.type == "Houses")
        #expect(m.fields["salesPrice"] == .int(1200))
        #expect(m.fields["costRate"] == .double(0.35))
        #expect(m.owner == "alice")
        #expect(m.key == "k1")
    }

    /// `acl` (issue 26): whom the record is shared with, by the socket's `update --acl` rules.
    @Test func anACLIsReadAndKept() throws {
        let m = try parse(#"{"memo":"m","acl":{"read":["bob"],"write":["carol"],"public":true}}"#)
        #expect(m.acl == ACL(readers: ["bob"], writers: ["carol"], publicRead: true))
        #expect(try MemoJob(json: m.json) == m)
        #expect(try parse(#"{"memo":"m"}"#).acl == nil)
    }

    @Test func defaultsToAMemoRecordWithoutPhoto() throws {
        let m = try parse(#"{"memo":"call back"}"#)
        #expect(m.type == "Memo")
        #expect(m.photo == nil)
        #expect(MemoJob.photoOnly("a.jpg").type == "Photo")
    }

    @Test(arguments: [
        (#"[1,2]"#, "must be a JSON object"),
        (#"{"foto":"a.jpg"}"#, "unknown key \"foto\""),
        (#"{"memo":5}"#, "\"memo\" must be a string"),
        (#"{"fields":[1]}"#, "\"fields\" must be an object"),
        (#"{"fields":{"a":{"x":1}}}"#, "must be a reference"),
        (#"{"fields":{"a":null}}"#, "must be a string, number"),
        (#"{"fields":{"memo":"x"}}"#, "built-in record key"),
        (#"{"fields":{"bad-name":1}}"#, "letters, digits"),
        (#"{"type":"no spaces"}"#, "\"type\" must be a name"),
        (#"{"photo":""}"#, "\"photo\" is empty"),
        (#"{"memo":"x""#, "not valid JSON"),
        (#"{"memo":"a\u0000b"}"#, #""memo" contains a NUL character (U+0000)"#),
        (#"{"fields":{"code":"A\u0000"}}"#, #"field "code" contains a NUL character"#),
        (#"{"fields":{"tags":["a","\u0000"]}}"#, #"field "tags"[1] contains a NUL character"#),
        (#"{"fields":{"a\u0000b":1}}"#, #"field name "a\0b" contains a NUL character"#),
        (#"{"key":"k\u0000","photo":"a.jpg"}"#, #""key" contains a NUL character"#),
        (#"{"photo":"a\u0000.jpg"}"#, #""photo" contains a NUL character"#),
        (#"{"fields":{"source":"x"}}"#, #"field name "source" is a built-in record key"#),
        (#"{"fields":{"sha256":"x"}}"#, #"field name "sha256" is a built-in record key"#),
        (#"{"acl":["bob"]}"#, #""acl" must be {"read": [users], "write": [users], "public": bool}, got array"#),
        (#"{"acl":{"read":"bob"}}"#, #""acl".read must be a list of user names"#),
        (#"{"acl":{"write":["bob",1]}}"#, #""acl".write must be a list of user names"#),
        (#"{"acl":{"public":"yes"}}"#, #""acl".public must be true or false"#),
        (#"{"acl":{"owner":"bob"}}"#, #""acl" has an unknown key "owner""#),
    ])
    func rejectsBadLinesWithAClearReason(_ line: String, _ reason: String) {
        do {
            _ = try parse(line)
            Issue.record("accepted \(line)")
        } catch let e as PhotomemoError {
            #expect(e.code == .badJob)
            #expect(e.message.contains(reason), "\(e.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// An acl list names at most `ACL.maxNames` users: each name is written and matched for
    /// every change of the record, so a line's cost must not grow with a list of 100,000.
    @Test func anACLListNamesAtMost256Users() throws {
        func line(_ n: Int) -> String {
            #"{"memo":"m","acl":{"read":["# + (0..<n).map { "\"u\($0)\"" }.joined(separator: ",") + "]}}"
        }
        #expect(try parse(line(256)).acl?.readers.count == 256)
        #expect(throws: PhotomemoError.self) { try parse(line(257)) }
        do { _ = try parse(line(257)) } catch let e as PhotomemoError {
            #expect(e.code == .badJob && e.message.contains(#""acl".read names 257 users; at most 256"#), "\(e.message)")
        }
    }

    /// `source` and `sha256` are record keys only since the receipts: a job stored with
    /// such a field before still reads.
    @Test func aStoredJobWithAFieldNowBuiltInStillReads() throws {
        let stored = try JSONValue.parse(#"{"memo":"m","type":"Memo","fields":{"source":"shop"}}"#)
        #expect(try MemoJob(json: stored).fields["source"] == "shop")
    }

    /// Lines have been refused for a NUL only since it broke PostgreSQL's index write: a
    /// job stored with one before (on SQLite) must still read.
    @Test func aStoredJobWithANULStillReads() throws {
        let stored = try JSONValue.parse(#"{"memo":"a\u0000b","type":"Memo","fields":{}}"#)
        #expect(try MemoJob(json: stored).memo == "a\u{0}b")
        #expect(throws: PhotomemoError.self) { try MemoJob(line: stored) }
    }

    @Test func rejectsInvalidUTF8AndLinesOverOneMebibyte() {
        #expect(throws: PhotomemoError.self) { try MemoJob.parse(line: [0x7B, 0xFF, 0x7D]) }
        let big = Array(("{\"memo\":\"" + String(repeating: "x", count: 1 << 20) + "\"}").utf8)
        #expect(throws: PhotomemoError.self) { try MemoJob.parse(line: big) }
    }
}

@Suite struct PhotoPolicyTests {
    let policy = PhotoPolicy(inbox: "/h/inbox", allowedRoots: ["/srv/photos"])

    @Test func acceptsInboxNamesAndAllowedAbsolutePaths() throws {
        #expect(try policy.resolve("IMG_1.jpg") == .inbox(name: "IMG_1.jpg"))
        let longest = String(repeating: "a", count: 251) + ".jpg"  // 255 bytes: NAME_MAX
        #expect(try policy.resolve(longest) == .inbox(name: longest))
        #expect(try policy.resolve("/srv/photos/a/b.jpg") == .absolute(path: "/srv/photos/a/b.jpg"))
    }

    @Test(arguments: ["../etc/passwd", "sub/../../a.jpg", "sub/./a.jpg", "sub//a.jpg", "sub/", ".", "a/\0/b.jpg", "..", "/etc/passwd", "/srv/photos/../../etc/passwd", "/srv/photosX/a.jpg",
                      String(repeating: "é", count: 128) + ".jpg"])
    func rejectsPathsEscapingTheInbox(_ p: String) {
        #expect(throws: PhotomemoError.self) { try policy.resolve(p) }
    }

    /// A photo path is matched as written (no link in it is resolved by the daemon), against
    /// each root as given and as its links resolve; a stored path finds the longest root.
    @Test func matchesPathsLexicallyAgainstRootsAsGivenAndResolved() throws {
        let dir = NSTemporaryDirectory() + "pm-policy-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/real/sub", withIntermediateDirectories: true)
        #expect(symlink(dir + "/real", dir + "/link") == 0)
        #expect(symlink("/etc", dir + "/real/etc") == 0)
        let p = PhotoPolicy(inbox: "/h/inbox", allowedRoots: [dir + "/link", dir + "/real/sub"])
        #expect(try p.resolve(dir + "/link/./a//b.jpg") == .absolute(path: dir + "/link/a/b.jpg"))
        #expect(try p.resolve(dir + "/real/a.jpg") == .absolute(path: dir + "/real/a.jpg"))
        #expect(try p.resolve(dir + "/real/etc/passwd") == .absolute(path: dir + "/real/etc/passwd"), "a link is left to the open")
        #expect(p.root(of: dir + "/real/sub/a.jpg") == dir + "/real/sub" && p.root(of: dir + "/real/a.jpg") == dir + "/real")
        #expect(p.root(of: "/h/inbox/a.jpg") == "/h/inbox" && p.root(of: "/h/inbox/x/a.jpg") == "/h/inbox" && p.root(of: "/etc/passwd") == nil)
    }

    @Test func ignoresNamesStillBeingWritten() {
        #expect(PhotoPolicy.isIgnoredInboxName(".IMG.jpg"))
        #expect(PhotoPolicy.isIgnoredInboxName("IMG.jpg.part"))
        #expect(PhotoPolicy.isIgnoredInboxName("IMG.jpg.tmp"))
        #expect(!PhotoPolicy.isIgnoredInboxName("IMG.jpg"))
    }

    /// A photo's name is its path relative to the inbox: sync tools write `DCIM/2026/12/…`.
    @Test func aPhotosNameIsItsPathInTheInbox() throws {
        #expect(try policy.resolve("DCIM/2026/12/IMG_0001.jpg") == .inbox(name: "DCIM/2026/12/IMG_0001.jpg"))
        #expect(try policy.resolve("a b/line\nbreak.jpg") == .inbox(name: "a b/line\nbreak.jpg"))
        let deep = Array(repeating: "d", count: 1000).joined(separator: "/") + "/x.jpg"
        #expect(try policy.resolve(deep) == .inbox(name: deep))
        #expect(throws: PhotomemoError.self) { try policy.resolve(String(repeating: "a/", count: 2100) + "x.jpg") }  // over PATH_MAX
        #expect(throws: PhotomemoError.self) { try policy.resolve("sub/" + String(repeating: "a", count: 256)) }  // a component over NAME_MAX
    }

    @Test func namesInToolFoldersAndUnderIgnoreGlobsAreNotTaken() {
        for name in ["DCIM/.stversions/IMG.jpg", "@eaDir/IMG.jpg/SYNOPHOTO_THUMB_XL.jpg", "#recycle/IMG.jpg", "lost+found/x.jpg",
                     "DCIM/.IMG.jpg.Xy12", "DCIM/IMG.jpg.partial", "DCIM/~syncthing~IMG.jpg.tmp"] {
            #expect(PhotoPolicy.isIgnoredInboxName(name), "\(name)")
        }
        for name in ["DCIM/IMG.jpg", "a@b/IMG.jpg", "recycle/IMG.jpg"] { #expect(!PhotoPolicy.isIgnoredInboxName(name), "\(name)") }
        let globs = ["*.mov", "Backup/*", "*~conflict*"]
        #expect(PhotoPolicy.isIgnoredInboxName("DCIM/clip.mov", globs: globs))  // by the base name
        #expect(PhotoPolicy.isIgnoredInboxName("Backup/IMG.jpg", globs: globs))  // by the path
        #expect(PhotoPolicy.isIgnoredInboxName("x/IMG~conflict-1.jpg", globs: globs))
        #expect(!PhotoPolicy.isIgnoredInboxName("DCIM/Backup/IMG.jpg", globs: globs) && !PhotoPolicy.isIgnoredInboxName("IMG.jpg", globs: globs))
        #expect(PhotoPolicy.isToolStateFolder("@eaDir") && PhotoPolicy.isToolStateFolder(".stfolder") && !PhotoPolicy.isToolStateFolder("DCIM"))
    }

    /// A nested name as one file name (quarantine, done/): no folder made, no two names alike.
    @Test func aNestedNameFlattensWithoutCollisions() {
        #expect(PhotoPolicy.flatName("IMG.jpg") == "IMG.jpg")
        #expect(PhotoPolicy.flatName("DCIM/IMG.jpg") == "DCIM%2FIMG.jpg")
        #expect(PhotoPolicy.flatName("a%2Fb/c.jpg") != PhotoPolicy.flatName("a/2Fb/c.jpg"))
        let long1 = String(repeating: "d/", count: 300) + "x.jpg", long2 = String(repeating: "d/", count: 301) + "x.jpg"
        #expect(PhotoPolicy.flatName(long1).utf8.count < 240 && PhotoPolicy.flatName(long1) != PhotoPolicy.flatName(long2))
        #expect(!PhotoPolicy.flatName(long1).contains("/") && PhotoPolicy.flatName(long1).hasSuffix("x.jpg"))
        // A long top-level name too, cut between characters (é is two bytes).
        let top = String(repeating: "é", count: 120) + ".jpg"
        let flat = PhotoPolicy.flatName(top)
        #expect(flat.utf8.count <= 180 && flat.hasSuffix(".jpg") && !flat.contains("\u{FFFD}") && flat != PhotoPolicy.flatName("x" + top))
    }
}
