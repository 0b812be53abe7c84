import Foundation
import Glibc
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// A photo's bytes are hashed once, by intake, when the daemon can prove nobody but an
/// admin can have changed them since (`PhotoSeal`): validate, compress and the local store
/// take intake's hash. Any other photo is re-hashed by validate, compress and the store,
/// and bytes changed after intake are refused either way.
/// `photomemo_sha256_bytes_total` shows which, through the real daemon and default job.
@Suite(.serialized) struct HashOnceTests {
    static let definition = try! String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8)
    static let photo = "xmp_no_exif.jpg"

    func hashedBytes(_ d: DaemonHarness) throws -> Int64? {
        let text = try #require(try json(d, ["metrics"])["text"]?.stringValue)
        let line = text.split(separator: "\n").first { $0.hasPrefix("photomemo_sha256_bytes_total ") }
        return line.flatMap { Int64($0.split(separator: " ")[1]) }
    }

    /// Bytes of the job's renditions (each hashed once, by compress, from memory).
    func renditionBytes(_ d: DaemonHarness) throws -> Int64 {
        let job = try JSONValue.parse(try #require(try d.jobs().first).results)
        return ["display", "thumbnail"].compactMap { job["upload"]?["assets"]?[$0]?["bytes"]?.intValue }.reduce(0, +)
    }

    /// Drops the photo as DESIGN says, with `mode` and one name; its size.
    func drop(_ d: DaemonHarness, mode: mode_t) throws -> Int64 {
        let tmp = d.home + "/inbox/.\(Self.photo).part"
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent(Self.photo).path, toPath: tmp)
        #expect(chmod(tmp, mode) == 0)
        #expect(rename(tmp, d.home + "/inbox/" + Self.photo) == 0)
        return Int64(try testPhoto(Self.photo).count)
    }

    @Test func theDaemonsOwnPhotoIsHashedByIntakeOnly() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        let size = try drop(d, mode: 0o644)
        try d.waitIdle(jobs: 1)
        #expect(try d.stateCounts() == ["done": 1])
        let hashed = try #require(try hashedBytes(d))
        // Intake's pass, the renditions by compress and the store, the job key.
        let renditions = try renditionBytes(d)
        #expect(renditions > 0)
        let expected = size + 2 * renditions
        #expect(hashed >= expected && hashed <= expected + 1024, "hashed \(hashed) for a \(size)-byte photo")
    }

    @Test func aPhotoOthersMayWriteIsHashedAtEveryStage() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        let size = try drop(d, mode: 0o666)
        try d.waitIdle(jobs: 1)
        #expect(try d.stateCounts() == ["done": 1])
        // Intake, validate, compress, and the store's copy (it may not link such a file).
        let hashed = try #require(try hashedBytes(d))
        #expect(hashed >= 4 * size, "hashed \(hashed) for a \(size)-byte photo")
    }

    /// Drops the photo with `mode` while validate is paused, rewrites `count` bytes in its
    /// middle (inside the entropy data: it still decodes) with size and mtime put back, so
    /// the inbox still sees the file it took; then lets the job run. The job when idle.
    func rewrittenAfterIntake(_ d: DaemonHarness, mode: mode_t, count: Int) throws -> (state: String, error: String?) {
        _ = try json(d, ["pause", "validate"])
        _ = try drop(d, mode: mode)
        let path = d.home + "/inbox/" + Self.photo
        try d.waitUntil("the photo is taken") { try d.stateCounts()["queued"] == 1 }
        var before = stat()
        #expect(stat(path, &before) == 0)
        let fd = open(path, O_WRONLY)
        #expect(fd >= 0)
        var junk = [UInt8](repeating: 0x55, count: count)
        #expect(pwrite(fd, &junk, junk.count, off_t(before.st_size / 2)) == junk.count)
        var times = [before.st_atim, before.st_mtim]
        #expect(futimens(fd, &times) == 0)
        close(fd)
        _ = try json(d, ["resume", "validate"])
        try d.waitIdle(jobs: 1)
        let job = try #require(try d.jobs().first)
        return (job.state, job.error)
    }

    /// An others-writable photo changed after intake: only the re-hash can tell, and it does.
    @Test func aPhotoOthersMayWriteChangedAfterIntakeIsRefused() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        let job = try rewrittenAfterIntake(d, mode: 0o666, count: 4096)
        #expect(job.state == "failed")
        #expect(job.error?.hasPrefix("photo changed after it was taken") == true, "\(job.error ?? "no error")")
    }

    /// The daemon's own photo changed the same way (as a recycled inode under `cp -p` would
    /// look, or a share that maps every writer to the daemon's uid): its ctime moved, so
    /// the seal is broken, validate hashes it and refuses it; nothing lands under the old hash.
    @Test func aSealedPhotoChangedAfterIntakeIsRefused() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        let job = try rewrittenAfterIntake(d, mode: 0o644, count: 64)
        #expect(job.state == "failed")
        #expect(job.error?.hasPrefix("photo changed after it was taken") == true, "\(job.error ?? "no error")")
        let stored = (try? FileManager.default.subpathsOfDirectory(atPath: d.home + "/store/sha256")) ?? []
        let taken = SHA256.hex(Data(try testPhoto(Self.photo)))
        #expect(!stored.contains { $0.hasSuffix(taken) }, "\(stored)")
    }
}
