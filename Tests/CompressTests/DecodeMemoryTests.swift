import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing
@testable import CompressStage

/// Issue 25, decode memory: compress reserves a decode's estimated memory from the
/// daemon's budget (`"memory_mb"`) before decoding. A photo that cannot get it now waits
/// (`unavailable`: no attempt spent, no thread held); one larger than the whole budget
/// fails with the reason. A progressive JPEG's coefficient buffer counts.
@Suite struct DecodeMemoryTests {
    func photo(_ c: Compressor, progressive: Bool = false) throws -> String {
        let path = c.home + (progressive ? "/progressive.jpg" : "/baseline.jpg")
        try SyntheticPhoto.write(to: path, width: 3000, height: 2000, seed: 1, quality: 90, progressive: progressive)
        return path
    }

    /// "decoding it needs about N MB" from an outcome's reason.
    func needMB(_ outcome: StageOutcome) -> Int? {
        let text: String
        switch outcome {
        case .unavailable(_, let r), .fail(let r): text = r
        default: return nil
        }
        guard let r = text.range(of: "needs about ") else { return nil }
        return Int(text[r.upperBound...].prefix { $0.isNumber })
    }

    @Test func aPhotoThatCannotGetItsReservationWaitsAndRunsOnceItIsFree() throws {
        let c = try Compressor()
        let budget = c.stage.decodeMemory
        budget.limitBytes = 64 << 20
        let path = try photo(c)
        #expect(budget.reserve(60 << 20) == .reserved)  // another decode holds most of it
        let waiting = c.run(path)
        guard case .unavailable(let dependency, let reason) = waiting else {
            Issue.record("\(waiting)")
            return
        }
        #expect(dependency == "decode memory" && reason.contains("other decodes hold 60 MB of the 64 MB budget"), "\(reason)")
        budget.release(60 << 20)
        guard case .continue = c.run(path) else { Issue.record("not made once the memory was free"); return }
        #expect(budget.reservedBytes == 0)  // given back
    }

    @Test func aPhotoLargerThanTheWholeBudgetFailsWithTheReason() throws {
        let c = try Compressor()
        c.stage.decodeMemory.limitBytes = 2 << 20
        let outcome = c.run(try photo(c))
        guard case .fail(let reason) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reason.contains("image is 3000x2000: decoding it needs about") && reason.contains("more than the whole decode memory budget (memory_mb: 2)"),
                "\(reason)")
        #expect(c.stage.decodeMemory.reservedBytes == 0)
    }

    /// libjpeg keeps a progressive JPEG's every coefficient until its last scan: 2 bytes a
    /// band a pixel, 36 MB for 3000x2000, on top of what a baseline one of that size needs.
    @Test func aProgressiveJPEGsCoefficientBufferCounts() throws {
        let c = try Compressor()
        c.stage.decodeMemory.limitBytes = 1 << 20
        let baseline = needMB(c.run(try photo(c))), progressive = needMB(c.run(try photo(c, progressive: true)))
        let (b, p) = (try #require(baseline), try #require(progressive))
        #expect(p - b >= 34 && p - b <= 37, "baseline \(b) MB, progressive \(p) MB")
    }
}

/// The budget's order: a large photo refused for want of room keeps its place, so a
/// steady stream of small ones (each fitting beside the others) cannot starve it.
@Suite struct DecodeMemoryOrderTests {
    @Test func aLargePhotoIsNotStarvedByAStreamOfSmallOnes() {
        let m = DecodeMemory(limitBytes: 100)
        #expect(m.reserve(40, for: "small0", now: 0) == .reserved && m.reserve(40, for: "small1", now: 0) == .reserved)
        var got: Int?
        // Two small decodes always running: each that ends is followed by a new one, and
        // the large photo (80) asks again between them.
        for i in 2..<20 {
            m.release(40)
            if got == nil, m.reserve(80, for: "large", now: Double(i)) == .reserved { got = i; continue }
            if got != nil { break }
            let small = m.reserve(40, for: "small\(i)", now: Double(i))
            if case .wait(let why) = small { #expect(why.contains("40 MB are kept for a photo waiting longer") || why.contains("hold")) }
            else { #expect(small == .reserved) }
        }
        #expect(got != nil && got! <= 4, "the large photo got its reservation at turn \(String(describing: got))")
    }

    @Test func aWaiterThatStopsAskingKeepsNoRoom() {
        let m = DecodeMemory(limitBytes: 100)
        #expect(m.reserve(60, for: "a", now: 0) == .reserved)
        guard case .wait = m.reserve(80, for: "large", now: 1) else { Issue.record("the large one was reserved"); return }
        m.release(60)
        guard case .wait = m.reserve(40, for: "b", now: 2) else { Issue.record("b was reserved beside the large one's room"); return }
        #expect(m.reserve(40, for: "b", now: 2 + DecodeMemory.waiterGoneSeconds) == .reserved)
    }
}
