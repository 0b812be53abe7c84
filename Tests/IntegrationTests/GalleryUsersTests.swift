import Foundation
import StageKit
import TestSupport
import Testing

/// Two Unix users on one daemon, each running `photomemo gallery` as themself: each
/// gallery holds exactly the records that user may read — their own, and another's only
/// once its ACL names them.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct GalleryUsersTests {
    let bob = "nobody", alice = "daemon"

    func cli(_ user: String, _ d: DaemonHarness, _ args: [String]) throws -> JSONValue {
        let (status, out, err) = try DaemonHarness.run(as: user, group: "nogroup", [DaemonHarness.binary] + args + ["--home", d.home, "--json"])
        #expect(status == 0, "\(user) \(args): \(err)")
        return try JSONValue.parse(out)
    }

    /// Every file of a gallery, as text (images as their names only).
    func contents(_ dir: String) throws -> String {
        let files = FileManager.default.enumerator(atPath: dir)?.compactMap { $0 as? String } ?? []
        return try files.sorted().map { f in
            f.hasPrefix("assets/") || f == "assets" || f == "r" ? f : f + "\n" + (try String(contentsOfFile: dir + "/" + f, encoding: .utf8))
        }.joined(separator: "\n")
    }

    @Test func eachGalleryHoldsOnlyWhatItsUserMayRead() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        for dir in [d.root, d.home] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o751)
        }
        chmod(d.root, 0o755)
        for dir in [d.home + "/inbox", d.home + "/queue.d", d.root + "/galleries"] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o1777)
        }
        try d.start(args: ["--socket-group", "nogroup"])
        for (user, photo, n) in [(bob, "orientation_landscape_1.jpg", 1), (bob, "Canon_40D.jpg", 2), (alice, "Nikon_D70.jpg", 1)] {
            let name = "\(user)-\(n).jpg"
            let line = #"{"photo":"\#(name)","memo":"memo \#(n) of \#(user)","fields":{"code":"\#(user)-\#(n)"}}"#
            #expect(try DaemonHarness.run(as: user, ["/bin/sh", "-c", "umask 022; echo '\(line)' >> \(d.home)/queue.d/\(user).jsonl"]).0 == 0)
            #expect(try DaemonHarness.run(as: user, ["/bin/cp", testPhotos.appendingPathComponent(photo).path, "\(d.home)/inbox/.\(name).part"]).0 == 0)
            #expect(try DaemonHarness.run(as: user, ["/bin/mv", "\(d.home)/inbox/.\(name).part", "\(d.home)/inbox/\(name)"]).0 == 0)
        }
        try d.waitIdle(jobs: 3, timeout: 90)
        #expect(try d.stateCounts()["done"] == 3)
        let all = try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue ?? []
        func ids(of user: String) -> Set<String> { Set(all.filter { $0["owner"] == .string(user) }.compactMap { $0["id"]?.stringValue }) }
        func sha256s(of user: String) -> Set<String> {
            Set(all.filter { $0["owner"] == .string(user) }.flatMap { ($0["assets"]?.objectValue ?? [:]).values.compactMap { $0["sha256"]?.stringValue } })
        }
        #expect(ids(of: bob).count == 2 && ids(of: alice).count == 1)

        func gallery(_ user: String) throws -> (ids: Set<String>, text: String, assets: Set<String>) {
            let dir = "\(d.root)/galleries/\(user)"
            let summary = try cli(user, d, ["gallery", dir])
            #expect(summary["warnings"] == [], "\(summary)")
            let pages = try FileManager.default.contentsOfDirectory(atPath: dir + "/r").map { String($0.dropLast(5)) }
            let assets = try FileManager.default.contentsOfDirectory(atPath: dir + "/assets").map { String($0.prefix(64)) }
            return (Set(pages), try contents(dir), Set(assets))
        }
        for (user, other) in [(bob, alice), (alice, bob)] {
            let g = try gallery(user)
            #expect(g.ids == ids(of: user), "\(user)'s gallery: \(g.ids)")
            #expect(g.assets.isSubset(of: sha256s(of: user)) && g.assets.count == 2 * ids(of: user).count, "\(g.assets)")
            #expect(!g.text.contains("of \(other)") && ids(of: other).allSatisfy { !g.text.contains($0) }, "\(user)'s gallery shows \(other)'s records")
            #expect(g.text.contains("memo 1 of \(user)"))
        }

        // Bob names alice as a reader of one of his records: her next gallery adds it, with its images.
        let shared = try #require(all.first { $0["memo"]?.stringValue == "memo 2 of \(bob)" }?["id"]?.stringValue)
        _ = try cli(bob, d, ["update", shared, "--acl", #"{"read": ["\#(alice)"]}"#])
        let after = try gallery(alice)
        #expect(after.ids == ids(of: alice).union([shared]) && after.text.contains("memo 2 of \(bob)") && !after.text.contains("memo 1 of \(bob)"))
        #expect(after.assets.count == 4)
        #expect(d.stop().status == 0)
    }
}
