import Foundation
import Testing
@testable import PhotomemoCore
@testable import StageKit

@Suite struct JSONValueTests {
    @Test func integersStayIntegersAndDoublesStayDoubles() throws {
        let v = try JSONValue.parse(#"{"a": 1200, "b": 0.35, "c": -7, "d": 1e3, "e": true, "f": null, "g": "x"}"#)
        #expect(v["a"] == .int(1200))
        #expect(v["b"] == .double(0.35))
        #expect(v["c"] == .int(-7))
        #expect(v["d"] == .double(1000))
        #expect(v["e"] == .bool(true))
        #expect(v["f"] == .null)
        #expect(v["g"] == .string("x"))
    }

    @Test func escapesAndSurrogatesDecode() throws {
        let v = try JSONValue.parse(#"["a\"b\\c\n", "\u00e9\ud83d\ude00"]"#)
        #expect(v == .array([.string("a\"b\\c\n"), .string("é😀")]))
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"abc", "{\"a\":1}x", "{\"a\":1,\"a\":2}",
        "\"\\ud800\"", "{'a':1}", "NaN",
    ])
    func rejectsInvalidJSON(_ text: String) {
        #expect(throws: PhotomemoError.self) { try JSONValue.parse(text) }
    }

    @Test func rejectsInvalidUTF8AndDeepNesting() {
        #expect(throws: PhotomemoError.self) { try JSONValue.parse(Data([0x22, 0xC3, 0x28, 0x22])) }
        #expect(throws: PhotomemoError.self) { try JSONValue.parse(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)) }
    }

    @Test func threeHundredThousandLevelsOfJSONAreAnErrorNotAStackOverflow() throws {
        // Arrays and objects count alike; the 65th opening is refused where it stands.
        let deep = String(repeating: #"[{"a":"#, count: 150_000) + "1" + String(repeating: "}]", count: 150_000)
        #expect(throws: PhotomemoError(.badJSON, "nesting deeper than 64 at byte 192")) { try JSONValue.parse(deep) }
        let limit = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try JSONValue.parse(limit).arrayValue?.count == 1)
    }

    @Test func serialisesCompactlyWithSortedKeysAndRoundTrips() throws {
        let v: JSONValue = ["b": [1, 2.5, "x\n"], "a": nil, "c": ["d": false]]
        #expect(v.jsonString == #"{"a":null,"b":[1,2.5,"x\n"],"c":{"d":false}}"#)
        #expect(try JSONValue.parse(v.jsonString) == v)
    }
}

@Suite struct SHA256Tests {
    @Test func knownDigests() throws {
        #expect(SHA256.hex(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let path = NSTemporaryDirectory() + "/sha-\(getpid())"
        try Data("abc".utf8).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let (hex, bytes) = try SHA256.hexOfFile(atPath: path)
        #expect(hex == SHA256.hex(Data("abc".utf8)))
        #expect(bytes == 3)
    }
}

@Suite struct RetryPolicyTests {
    @Test func ceilingDoublesUpToTheCap() {
        let p = RetryPolicy.exponentialJitter(maxAttempts: 6, baseMs: 500, maxMs: 60_000)
        #expect(p.ceilingMs(afterFailures: 1) == 500)
        #expect(p.ceilingMs(afterFailures: 2) == 1000)
        #expect(p.ceilingMs(afterFailures: 5) == 8000)
        #expect(p.ceilingMs(afterFailures: 20) == 60_000)
        #expect(p.ceilingMs(afterFailures: 1000) == 60_000)
    }

    @Test func fullJitterStaysWithinZeroAndTheCeilingAndVaries() {
        let p = RetryPolicy.exponentialJitter(maxAttempts: 6, baseMs: 500, maxMs: 60_000)
        let delays = (0..<500).map { _ in p.delayMs(afterFailures: 4) }
        #expect(delays.allSatisfy { $0 >= 1 && $0 <= 4000 })
        #expect(Set(delays).count > 100)
        #expect(delays.contains { $0 < 1000 } && delays.contains { $0 > 3000 })
    }
}

@Suite struct LogLineTests {
    @Test func aMessageIsOneLineWhateverItHolds() {
        #expect(Log.oneLine("took new\nline.jpg") == "took new\\nline.jpg")
        #expect(Log.oneLine("a\r\u{1B}[31mb\u{7F}") == "a\\r\\x1B[31mb\\x7F")
        #expect(Log.oneLine("plain é") == "plain é")
    }
}
