import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// Photos a real transfer or sync tool (rsync, rclone, sftp, scp, Syncthing) carries from a
/// source folder into a real daemon's inbox, and what must come of it (issue #26): exactly
/// one record per photo, for its complete bytes; no quarantine entry; no failed job.
///
/// `folders` are where the photos sit in the source tree, relative to it (the photos dealt
/// out among them in turn), and so where the tool puts them under the inbox: `[""]` is a
/// flat inbox, `tree` the top and two folders of a phone's camera roll. `stages` is the job definition (`keepStages`
/// keeps the originals: then `inboxPhotos()` equals the source tree afterwards).
final class ToolDelivery {
    let d: DaemonHarness
    /// The folder the tool reads: the phone, the camera, the laptop.
    let source: String
    let folders: [String]
    /// Each photo's path under `source` (and, once delivered, under the inbox).
    let photos: [String]
    /// sha256 of each photo's bytes, as sent.
    let hashes: [String: String]

    /// The photo stages and the index, no renditions: enough to see each photo stored once.
    static let stages = RenameRaceTests.definition
    /// The same, into an inbox that keeps its originals (a folder a sync tool owns).
    static let keepStages = stages.replacingOccurrences(of: #"{"name": "race","#, with: #"{"name": "race", "inbox": {"originals": "keep"},"#)

    /// The top of the tree and two folders of a camera roll, at two depths: a tool's run
    /// into it is one into a flat inbox and into nested folders at once.
    static let tree = ["", "DCIM/100APPLE", "DCIM/2026/12"]

    /// Copies `names` from the test photos into a fresh source tree (mode 0644, as a camera
    /// roll's files are) and starts a daemon.
    init(_ names: [String], folders: [String] = [""], stages: String = ToolDelivery.stages, daemonArgs: [String] = []) throws {
        d = try DaemonHarness(stages: stages)
        let source = d.root + "/source"
        self.source = source
        self.folders = folders
        var hashes: [String: String] = [:]
        photos = try names.enumerated().map { i, name in
            let folder = folders[i % folders.count]
            try FileManager.default.createDirectory(atPath: folder.isEmpty ? source : source + "/" + folder, withIntermediateDirectories: true)
            let relative = folder.isEmpty ? name : folder + "/" + name
            try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent(name).path, toPath: source + "/" + relative)
            chmod(source + "/" + relative, 0o644)
            hashes[relative] = try SHA256.hexOfFile(atPath: source + "/" + relative).hex
            return relative
        }
        self.hashes = hashes
        try d.start(args: daemonArgs)
    }

    var inbox: String { d.home + "/inbox" }

    /// Runs the tool: it must exit 0 and say nothing on stderr. A rename or a check of its
    /// own that found its file taken away fails it, or makes it report the error and send
    /// the file again (rclone retries, and exits 0 if a retry got through).
    /// `progress`: a line the tool writes to stderr on success (smbclient's `putting file ...`).
    func run(_ argv: [String], environment: [String: String]? = nil, progress: String? = nil) throws {
        let (status, out, all) = try runTool(argv, environment: environment)
        let err = all.split(separator: "\n").filter { line in progress.map { !line.hasPrefix($0) } ?? true }
            .filter { !$0.allSatisfy(\.isWhitespace) }.joined(separator: "\n")
        #expect(status == 0 && err.isEmpty, "\(argv.joined(separator: " ")) exited \(status): \(err) \(out)\ndaemon log:\n\(d.log.suffix(2000))")
    }

    /// Waits until every photo is a record and nothing is left to do, then checks: one
    /// record per photo whose original is the photo's bytes, each job done under the
    /// photo's name, nothing quarantined.
    func expectEachPhotoStoredOnce(timeout: Double = 30) throws {
        let expected = Set(hashes.values)
        try d.waitUntil("a record for each of \(photos.count) photos, and no job left to run", timeout: timeout) {
            let c = try d.stateCounts()
            return try Set(originals()) == expected && (c["queued"] ?? 0) + (c["running"] ?? 0) + (c["waiting"] ?? 0) == 0
        }
        let stored = try originals()
        #expect(stored.count == photos.count, "records' originals: \(stored), sent: \(hashes)")
        let jobs = try d.jobs()
        #expect(jobs.allSatisfy { $0.state == "done" }, "\(jobs.map { ($0.photo, $0.state, $0.error) })")
        #expect(Set(jobs.compactMap(\.photo)) == Set(photos), "\(jobs.map { ($0.photo, $0.state, $0.error) })")
        #expect(d.quarantined().isEmpty, "\(d.quarantined())")
        // Each record's receipt names the photo's path in the inbox and the bytes it was sent with.
        let receipts = try records().map { ($0["source"]?.stringValue ?? "none", $0["sha256"]?.stringValue ?? "none") }
        #expect(Dictionary(receipts) { a, _ in a } == hashes && receipts.count == hashes.count, "records' receipts: \(receipts)")
        for folder in folders where !folder.isEmpty {
            var isDir: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: inbox + "/" + folder, isDirectory: &isDir) && isDir.boolValue, "\(folder) left the inbox")
        }
    }

    func records() throws -> [JSONValue] {
        try json(d, ["query", "TRUEPREDICATE", "--limit", "1000"])["records"]?.arrayValue ?? []
    }

    /// The sha256 of each record's original, one entry per record.
    func originals() throws -> [String] {
        try records().compactMap { $0["assets"]?["original"]?["sha256"]?.stringValue }
    }

    /// The photos left in the inbox (paths of regular files, dot names and tool folders
    /// aside): none once a consuming inbox has stored them.
    func inboxPhotos() -> [String: String] { Self.snapshot(inbox) }

    /// Every regular file under `root` that is not under a `.` name, with its sha256: to
    /// see a phone's folder (or a `keep` inbox) unchanged.
    static func snapshot(_ root: String) -> [String: String] {
        var out: [String: String] = [:]
        guard let walk = FileManager.default.enumerator(atPath: root) else { return out }
        while let path = walk.nextObject() as? String {
            if path.split(separator: "/").contains(where: { $0.hasPrefix(".") }) { continue }
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDir), !isDir.boolValue else { continue }
            out[path] = (try? SHA256.hexOfFile(atPath: root + "/" + path).hex) ?? "unreadable"
        }
        return out
    }
}
