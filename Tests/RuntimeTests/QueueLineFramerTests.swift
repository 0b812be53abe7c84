import Testing
@testable import Runtime

/// The framer alone: no file, no journal, no loop.
@Suite struct QueueLineFramerTests {
    static func bytes(_ s: String) -> ArraySlice<UInt8> { ArraySlice(Array(s.utf8)) }
    static func text(_ line: QueueLineFramer.Line) -> String { String(decoding: line.bytes, as: UTF8.self) }

    @Test func wholeLinesComeOutAndAPartialLastLineStays() {
        var f = QueueLineFramer(Self.bytes("{\"a\":1}\n{\"b\":2}\n{\"c\""))
        let first = f.next()
        #expect(first.map(Self.text) == "{\"a\":1}" && first?.start == 0 && first?.length == 8)
        let second = f.next()
        #expect(second.map(Self.text) == "{\"b\":2}" && second?.start == 8)
        #expect(f.next() == nil)
        #expect(f.consumed == 16)  // the partial `{"c"` waits for its newline
        #expect(!f.startsOverlongLine(cap: 3))  // it follows whole lines: not a line's start
    }

    @Test func crlfLosesItsCarriageReturnButTheOffsetCountsIt() {
        var f = QueueLineFramer(Self.bytes("{}\r\n\r\n"))
        let line = f.next()
        #expect(line.map(Self.text) == "{}" && line?.length == 4)
        #expect(f.next()?.isBlank == true)
        #expect(f.consumed == 6)
    }

    @Test func blankLinesAreOnlySpacesAndTabs() {
        var f = QueueLineFramer(Self.bytes(" \t\n\n x\n"))
        #expect(f.next()?.isBlank == true)
        #expect(f.next()?.isBlank == true)
        #expect(f.next()?.isBlank == false)
    }

    @Test func aChunkWithNoNewlineOverTheCapIsAnOverlongLine() {
        let f = QueueLineFramer(ArraySlice(repeating: UInt8(ascii: "x"), count: 11))
        #expect(f.startsOverlongLine(cap: 10))
        #expect(!f.startsOverlongLine(cap: 11))  // at the cap: a partial line that may still end
    }

    @Test func aHugeLineWithItsNewlineInTheChunkIsOneLine() {
        // Its length is the parser's to refuse (MemoJob's limit), with its line number.
        var huge = Array(repeating: UInt8(ascii: "x"), count: 2 << 20)
        huge.append(0x0A)
        var f = QueueLineFramer(ArraySlice(huge))
        #expect(!f.startsOverlongLine(cap: 1 << 20))
        #expect(f.next()?.bytes.count == 2 << 20)
        #expect(f.next() == nil)
    }

    @Test func aChunkSliceNotStartingAtZeroFramesFromItsStart() {
        let all = Array("skip\nab\ncd\n".utf8)
        var f = QueueLineFramer(all[5...])
        #expect(f.next().map(Self.text) == "ab")
        let cd = f.next()
        #expect(cd.map(Self.text) == "cd" && cd?.start == 3)
    }
}
