import CompressStage
import Foundation
import PhotomemoCore
import TestSupport
import Testing

/// Compress on a real photo through the stage kit (no daemon): it leaves each rendition in
/// the working set with the hash and size of the file it wrote, and the original's size.
@Suite struct CompressWorkingSetTests {
    @Test func theWorkingSetNamesTheFilesCompressWroteWithTheirHashes() throws {
        let kit = try StageKit(photo: "Canon_40D.jpg")
        guard case .continue = try kit.run(CompressStage.self) else { Issue.record("compress did not continue"); return }
        let renditions = kit.working.renditions
        #expect(renditions.map(\.role.description).sorted() == ["display", "thumbnail"])
        for r in renditions {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: r.path))
            #expect(r.sha256 == SHA256.hex(bytes) && r.bytes == Int64(bytes.count), "\(r.role)")
            #expect(r.format == "jpeg" && (r.width ?? 0) > 0)
        }
        let original = try #require(kit.results["compress"]?["original"])
        #expect(kit.working.original?.width.map { Int64($0) } == original["width"]?.intValue && (kit.working.original?.width ?? 0) > 0)
        #expect(kit.working.original?.height.map { Int64($0) } == original["height"]?.intValue && kit.working.original?.format == "jpeg")
        #expect(kit.working.exif?["make"] == "Canon")
        // Run again for the same job (a crash before the journal write): the same files.
        let first = kit.working
        try kit.run(CompressStage.self)
        #expect(kit.working.renditions.map(\.sha256) == first.renditions.map(\.sha256))
    }
}
