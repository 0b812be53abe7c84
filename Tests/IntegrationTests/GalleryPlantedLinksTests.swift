import Foundation
import StageKit
import TestSupport
import Testing

/// Root runs `photomemo gallery DIR` (or `asset -o FILE`) in a folder another user
/// ("nobody") can write, who planted symlinks there: for the temp names of the next pids,
/// for the lock, for r/ and assets/, next to a forged `.gallery.json`. Nothing outside
/// DIR is written, created or removed: a root-only file keeps its bytes, a root-only
/// folder gains nothing and loses nothing.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct GalleryPlantedLinksTests {
    let nobody: uid_t = 65534

    /// A daemon with one photo's record (display and thumbnail images), and a root-only
    /// folder holding a root-only file.
    func setUp() throws -> (DaemonHarness, record: JSONValue, victim: String) {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        try d.start()
        try d.drop("Nikon_D70.jpg", as: "dish.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        let record = try #require(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.first)
        let victim = d.root + "/victim"
        try FileManager.default.createDirectory(atPath: victim, withIntermediateDirectories: true)
        chmod(victim, 0o700)
        try "root only\n".write(toFile: victim + "/secret", atomically: false, encoding: .utf8)
        chmod(victim + "/secret", 0o600)
        chmod(d.root, 0o755)
        return (d, record, victim)
    }

    /// A folder owned by nobody, holding what nobody planted: a forged manifest (so it
    /// passes for an earlier gallery) and `links` (name in the folder -> target).
    func plantedFolder(_ path: String, links: [String: String], folders: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let forged = #"{"generator":"forged","records":{"x":{"tag":"","refs":{},"assets":["../../victim/secret"],"page":"../victim/secret"}}}"#
        try forged.write(toFile: path + "/.gallery.json", atomically: false, encoding: .utf8)
        for f in folders { try FileManager.default.createDirectory(atPath: path + "/" + f, withIntermediateDirectories: true) }
        for (name, target) in links { #expect(symlink(target, path + "/" + name) == 0, "\(name)") }
        // Everything as nobody's own, as if they had made it.
        let all = [path, path + "/.gallery.json"] + folders.map { path + "/" + $0 } + links.keys.map { path + "/" + $0 }
        for p in all { #expect(lchown(p, nobody, nobody) == 0, "\(p)") }
    }

    /// The pids the next few thousand processes will get (pid_max wraps to 300).
    func nextPids(_ count: Int32) throws -> [Int32] {
        let last = Int32(try String(contentsOfFile: "/proc/sys/kernel/ns_last_pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))!
        let max = Int32(try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))!
        return (1...count).map { i in let p = last + i; return p < max ? p : 300 + (p - max) % (max - 300) }
    }

    func victimUntouched(_ victim: String) throws {
        #expect(try String(contentsOfFile: victim + "/secret", encoding: .utf8) == "root only\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: victim) == ["secret"])
    }

    @Test func linksForTheNextPidsAreNeverWrittenThrough() throws {
        let (d, record, victim) = try setUp()
        let id = try #require(record["id"]?.stringValue)
        let images = ["display", "thumbnail"].compactMap { record["assets"]?[$0]?["sha256"]?.stringValue.map { $0 + ".jpg" } }
        #expect(images.count == 2)
        let dir = d.root + "/shared", out = d.root + "/out"
        try plantedFolder(out, links: [:])
        var links: [String: String] = [:]
        for pid in try nextPids(4000) {
            for image in images { links["assets/.\(image).part-\(pid)"] = victim + "/secret" }
            links["r/.\(id).html.tmp-\(pid)"] = victim + "/secret"
            links[".index.html.tmp-\(pid)"] = victim + "/secret"
        }
        try plantedFolder(dir, links: links, folders: ["assets", "r"])
        var outLinks: [String: String] = [:]
        for pid in try nextPids(4000) { outLinks[".dish.jpg.part-\(pid)"] = victim + "/secret" }
        for (name, target) in outLinks { #expect(symlink(target, out + "/" + name) == 0) }

        let summary = try json(d, ["gallery", dir])
        #expect(summary["records"] == 1 && summary["assets_fetched"] == 2, "\(summary)")
        #expect(FileManager.default.fileExists(atPath: "\(dir)/r/\(id).html"))
        _ = try json(d, ["asset", id, "display", "-o", out + "/dish.jpg"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/dish.jpg")).count == record["assets"]?["display"]?["bytes"]?.intValue.map(Int.init))
        try victimUntouched(victim)
        #expect(d.stop().status == 0)
    }

    @Test func aLinkedLockOrSubfolderIsRefused() throws {
        let (d, _, victim) = try setUp()
        let cases: [(String, [String: String], [String])] = [
            ("lock", [".gallery.lock": victim + "/made-by-lock"], []),
            ("assets", ["assets": victim], ["r"]),
            ("pages", ["r": victim], ["assets"]),
        ]
        for (name, links, folders) in cases {
            let dir = d.root + "/shared-" + name
            try plantedFolder(dir, links: links, folders: folders)
            let (status, _, err) = try DaemonHarness.run(["gallery", dir, "--home", d.home])
            #expect(status != 0 && err.contains("is a symlink"), "\(name): \(status) \(err)")
            try victimUntouched(victim)
        }
        #expect(d.stop().status == 0)
    }
}
