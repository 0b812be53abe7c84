import Foundation
import FuzzDriver
import StageKit
@testable import CompressStage
@testable import PhotomemoCore

// Compress on arbitrary bytes (hostile uploads): libvips' header read, the HEIF limits and
// photomemo's own decoders (pm_jpeg_decode with jpeg_idct.h's inverse DCTs, the HEIF tile
// path), the resampler and the encoders, as a definition without validate runs them. It
// refuses with an error or makes every rendition; any trap or sanitizer report is a bug.
// Small renditions and max_pixels 4 MP keep an input to milliseconds; a 200 px JPEG
// rendition of a 600-800 px wide photo decodes at 3/8 (Fuzz/corpus/compress), the WebP
// fill crops.
let home = NSTemporaryDirectory() + "fuzz-compress-\(getpid())"
try! FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "fuzz-compress-\(getpid())") }
let stage = try! CompressStage(
    options: StageOptions(validating: [
        "max_pixels": 4_000_000,
        "renditions": [["name": "display", "width": 200, "format": "jpeg", "quality": 90],
                       ["name": "thumbnail", "fill": [64, 48], "format": "webp", "quality": 70]],
    ], against: CompressStage.options, place: "fuzz-compress"),
    environment: StageEnvironment(home: URL(fileURLWithPath: home)))

runFuzzer { bytes in
    // The stage reads a photo into a buffer of its own (PhotoBytes frees it).
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 16)
    buffer.copyMemory(from: bytes)
    let photo = PhotoBytes(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<bytes.count]), fileSize: Int64(bytes.count))
    let made: [(Rendition, Data, Int, Int)]
    do {
        made = try stage.make(photo).1
    } catch {
        return
    }
    guard made.count == stage.renditions.count else { bug("made \(made.count) of \(stage.renditions.count) renditions") }
    for (r, data, w, h) in made where data.isEmpty || w <= 0 || h <= 0 {
        bug("rendition \(r.name) is \(w)x\(h), \(data.count) bytes")
    }
}
