import Foundation
import TestSupport
import Testing

extension WhoMayDoWhatTests {
    /// `photomemo inbox` shows why each entry is left alone, and a reason quotes names a
    /// user chose (a sidecar's photo, a link's text): bob's escape sequence must reach the
    /// admin's terminal escaped, in the reason column as in the name column.
    @Test func hostileNamesInInboxReasonsReachATerminalEscaped() throws {
        let d = try start()
        let name = "x\u{1B}]0;pwned\u{07}\u{1B}[2J\nFORGED.jpg.json"
        try put(bob, d, "{}", as: name)
        try d.waitUntil("bob's sidecar is listed", timeout: 10) { try inboxReasons(bob, d)[name] != nil }
        let (status, table, _) = try DaemonHarness.run(["inbox", "--home", d.home])
        #expect(status == 0)
        #expect(!table.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(table.debugDescription)")
        #expect(!table.split(separator: "\n").contains { $0.hasPrefix("FORGED") }, "\(table)")
        #expect(table.contains(#"memo sidecar waiting for its photo x\x1B]0;pwned\x7\x1B[2J\nFORGED.jpg"#), "\(table)")
    }
}
