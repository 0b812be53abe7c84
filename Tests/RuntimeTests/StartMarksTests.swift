import Foundation
import Testing
@testable import Runtime

/// The start marks as the next process reads them: what is started and not ended, nothing
/// when there is no file or it cannot be trusted.
@Suite struct StartMarksTests {
    let path = NSTemporaryDirectory() + "pm-started-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    @Test func theNextProcessReadsTheRunsStartedAndNotEnded() throws {
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(StartMarks.lastStarted(in: path) == nil)  // no file: unknown
        let marks = try StartMarks(path: path)
        #expect(StartMarks.lastStarted(in: path) == [:])
        marks.started([(1, 1), (2, 3)])
        marks.started([(3, 1)])
        marks.ended([2])
        #expect(StartMarks.lastStarted(in: path) == [1: 1, 3: 1])
        marks.started([(2, 4)])  // the same job started again, at its next attempt
        #expect(StartMarks.lastStarted(in: path) == [1: 1, 2: 4, 3: 1])
        // A new process starts with no marks (the last one's were read before).
        _ = try StartMarks(path: path)
        #expect(StartMarks.lastStarted(in: path) == [:])
    }

    @Test func moreRunsThanItHoldsOrAnotherFileAreUnknown() throws {
        defer { try? FileManager.default.removeItem(atPath: path) }
        let marks = try StartMarks(path: path)
        marks.started((0..<Int64(StartMarks.capacity + 1)).map { ($0, 1) })
        #expect(StartMarks.lastStarted(in: path) == nil)
        marks.ended([0])
        #expect(StartMarks.lastStarted(in: path)?.count == StartMarks.capacity)
        try Data("not the marks".utf8).write(to: URL(fileURLWithPath: path))
        #expect(StartMarks.lastStarted(in: path) == nil)
    }
}
