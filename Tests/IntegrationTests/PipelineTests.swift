import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// The stages that exist, in the daemon, on real photos.
@Suite(.serialized) struct PipelineTests {
    @Test func validateCompressUploadOnRealPhotos() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/local-store.json"), encoding: .utf8))
        try d.start()
        let photos = ["orientation_portrait_6.jpg", "IMG_5195.HEIC", "Canon_40D.jpg"]
        for p in photos { try d.drop(p) }
        try d.drop("corrupted.jpg")
        // While compress runs, the socket keeps answering.
        let c = try SocketClient(path: d.home + "/photomemo.sock")
        #expect(c.call("status")?["ok"] == true)
        try d.waitIdle(jobs: 4)
        let done = try d.jobs("state = 'done'")
        #expect(done.count == 3)
        for j in done {
            let r = try JSONValue.parse(j.results)
            let display = try #require(r["compress"]?["renditions"]?["display"])
            #expect(display["width"] == 860)
            #expect(r["compress"]?["renditions"]?["thumbnail"]?["height"] == 200)
            // Uploaded: the stored object is the rendition; the local copy is gone.
            let key = try #require(r["upload"]?["assets"]?["display"]?["key"]?.stringValue)
            #expect(try SHA256.hexOfFile(atPath: d.home + "/store/" + key).hex == display["sha256"]?.stringValue)
            #expect(!FileManager.default.fileExists(atPath: display["path"]?.stringValue ?? ""))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.home + "/inbox").isEmpty)
        let portrait = try #require(done.first { $0.photo == "orientation_portrait_6.jpg" })
        #expect(try JSONValue.parse(portrait.results)["compress"]?["renditions"]?["display"]?["height"] == 1147)
        // corrupted.jpg never reached compress: validate caught it.
        #expect(try d.jobs("state = 'failed'").first?.error?.contains("JPEG is damaged") == true)
        #expect(d.stop().status == 0)
    }
}
