import Foundation
import Glibc
import StageKit
import Testing
import UploadStage

/// A store whose filesystem is full is an outage of the disk (the job waits, no attempt
/// spent), decided by the errno's code where the write failed, not by the reason's text.
@Suite struct UploadFullStoreTests {
    /// The store on a tiny tmpfs of its own, filled to the last byte (needs root).
    @Test func aStoreWriteRefusedForSpaceIsTheDisksOutage() throws {
        let h = try StageHome()
        let store = h.root + "/store"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=256k", "tmpfs", store]
        try mount.run()
        mount.waitUntilExit()
        try #require(mount.terminationStatus == 0, "cannot mount a tmpfs")
        defer {
            let umount = Process()
            umount.executableURL = URL(fileURLWithPath: "/bin/umount")
            umount.arguments = ["-l", store]
            try? umount.run()
            umount.waitUntilExit()
        }
        let stage = try h.stage(UploadStage.self)
        let fd = open(store + "/filler", O_WRONLY | O_CREAT, 0o600)
        try #require(fd >= 0)
        let chunk = [UInt8](repeating: 7, count: 4096)
        while write(fd, chunk, chunk.count) > 0 {}
        let full = errno
        close(fd)
        try #require(full == ENOSPC)

        let photo = try h.write("inbox/IMG_1.jpg", "original bytes")
        let job = JobContext(id: 9, key: "IMG_1", photoPath: photo.path, photoSHA256: photo.sha,
                             photoRoot: h.root + "/inbox", memo: .photoOnly("IMG_1.jpg"), results: [:], attempt: 1,
                             working: WorkingSet(files: [.init(role: .original, path: photo.path, sha256: photo.sha,
                                                               width: 1, height: 1, format: "jpeg")]))
        let outcome = stage.run(job)
        guard case .unavailable(let dependency, let reason) = outcome else { Issue.record("\(outcome)"); return }
        #expect(dependency == StageOutcome.diskDependency, "\(reason)")
        #expect(h.exists(photo.path), "the photo left the inbox though it was not stored")
    }

    /// The code travels with the error, whatever its text says.
    @Test func theLadderDecidesByCodeNotText() {
        #expect(StageOutcome(catching: StoreFailure(.transient, "the store refused the write", code: .noSpace))
                == .noSpace("the store refused the write"))
        #expect(StageOutcome(catching: SystemError("write", errno: EDQUOT)) == .noSpace("write: \(SystemError.reason(EDQUOT))"))
        #expect(StageOutcome(catching: PhotomemoError(.badImage, "No space left on device, says the photo's comment"))
                == .fail(reason: "No space left on device, says the photo's comment"))
        #expect(StageOutcome(catching: PhotomemoError(.io, "read: Input/output error")) == .retry(reason: "read: Input/output error"))
    }
}
