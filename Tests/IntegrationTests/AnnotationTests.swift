import Foundation
import StageKit
import TestSupport
import Testing

/// What a stage annotates reaches the record without the index stage knowing that stage:
/// an exec program between compress and upload answers `"annotations"` (as an OCR stage
/// would give a photo its text), and the records get them as typed fields, queryable.
@Suite(.serialized) struct AnnotationTests {
    @Test func anExecStagesAnnotationsBecomeQueryableFieldsOfTheRecord() throws {
        let d = try DaemonHarness(stages: "{}")
        let script = d.root + "/ocr.sh"
        // Reads the job, answers its photo's "text", a list of labels and a number.
        try """
            #!/bin/sh
            cat >/dev/null
            name=$(basename "$PHOTOMEMO_PHOTO")
            printf '{"annotations": {"ocr_text": "text of %s", "labels": ["receipt", "paper"], "lines": 2}}\\n' "$name"
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let definition = try String(contentsOf: packageRoot.appendingPathComponent("Jobs/local-store.json"), encoding: .utf8)
            .replacingOccurrences(of: #"{"use": "upload",   "with": {}},"#,
                                  with: #"{"use": "exec", "with": {"command": ["\#(script)"]}}, {"use": "upload", "with": {}},"#)
        #expect(definition.contains(#""use": "exec""#))
        try definition.write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        try d.start()
        // b.jpg's memo gives the field itself: the memo's value stays.
        try d.append(#"{"photo": "b.jpg", "memo": "typed", "fields": {"ocr_text": "typed by hand"}}"# + "\n")
        try d.waitUntil("the memo waits for its photo") { try d.jobs().count == 1 }
        try d.drop("Canon_40D.jpg", as: "a.jpg")
        try d.drop("Nikon_D70.jpg", as: "b.jpg")
        try d.waitIdle(jobs: 2)
        let jobs = try d.jobs()
        #expect(jobs.allSatisfy { $0.state == "done" }, "\(jobs)")

        func sources(_ predicate: String) throws -> [String] {
            try json(d, ["query", predicate])["records"]?.arrayValue?.compactMap { $0["source"]?.stringValue }.sorted() ?? []
        }
        #expect(try sources(#"ocr_text == "text of a.jpg""#) == ["a.jpg"])
        #expect(try sources(#"ocr_text BEGINSWITH "text of""#) == ["a.jpg"])
        #expect(try sources(#"ocr_text == "typed by hand""#) == ["b.jpg"])
        #expect(try sources(#"labels CONTAINS "receipt" AND lines == 2"#) == ["a.jpg", "b.jpg"])
        let a = try #require(try json(d, ["query", #"ocr_text == "text of a.jpg""#])["records"]?.arrayValue?.first)
        #expect(a["fields"] == ["ocr_text": "text of a.jpg", "labels": ["receipt", "paper"], "lines": 2])
        #expect(d.stop().status == 0)
    }
}
