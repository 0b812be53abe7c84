import Foundation
import StageKit
import Testing
@testable import Runtime

/// A socket line → what the connection does with it, before any command runs.
@Suite struct ControlRequestLineTests {
    static func line(_ s: String) -> ControlRequestLine { ControlRequestLine(Array(s.utf8)) }

    @Test func aRequestKeepsItsIDCommandAndArguments() {
        let values: [String: JSONValue] = ["id": 7, "cmd": "get", "record": "r1"]
        #expect(Self.line(#"{"id": 7, "cmd": "get", "record": "r1"}"#)
            == .request(id: 7, cmd: "get", ControlRequest(values: values)))
    }

    @Test func blankLinesGetNoReply() {
        #expect(Self.line("") == .blank)
        #expect(Self.line(" \t\r") == .blank)
    }

    @Test func unreadableLinesAreBadRequestsWithANullID() {
        for text in ["{", "[1, 2]", "\"status\"", #"{"cmd": "status"} x"#, "\u{0B}"] {
            guard case .invalid(let id, let error) = Self.line(text) else {
                Issue.record("\(text) was not refused")
                continue
            }
            #expect(id == .null)
            #expect(error.code == .badRequest)
        }
    }

    @Test func aMissingCommandIsRefusedWithTheRequestsID() {
        guard case .invalid(let id, let error) = Self.line(#"{"id": "a", "cmd": 3}"#) else {
            Issue.record("not refused")
            return
        }
        #expect(id == "a")
        #expect(error.message.contains("\"cmd\""))
    }
}
