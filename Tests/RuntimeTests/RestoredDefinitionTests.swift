import Foundation
import StageKit
import Testing
@testable import Runtime

/// What a restored `job.json` names of its own place (`BackupRestore.enginesInTheHome`):
/// what was copied into the new home is named there; what stays where it is (an S3 store, a
/// PostgreSQL database) is left; a definition that does not parse is said, not a failure.
@Suite struct RestoredDefinitionTests {
    func write(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "pm-restored-job-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// An S3 store's home kept naming the original's SQLite file: two daemons on one journal.
    @Test func aSQLiteDatabaseElsewhereIsRenamedWhateverTheStore() throws {
        let path = try write(#"{"name": "j", "store": "s3://bucket/p", "database": "sqlite:/data/pm.sqlite", "stages": []}"#)
        defer { unlink(path) }
        let said = try BackupRestore.enginesInTheHome(path, home: "/new", database: true, store: false)
        #expect(said == ["its definition's database sqlite:/data/pm.sqlite is now sqlite:photomemo.sqlite, restored in /new: a restored home never shares the original's"])
        let job = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(job["database"] == "sqlite:photomemo.sqlite" && job["store"] == "s3://bucket/p" && job["name"] == "j")
    }

    @Test func aDefinitionThatDoesNotParseIsSaidAndLeft() throws {
        let broken = #"{"name": "photo-memo", // broken"#
        let path = try write(broken)
        defer { unlink(path) }
        let said = try BackupRestore.enginesInTheHome(path, home: "/new", database: true, store: true)
        #expect(said.count == 1 && said[0].contains("is not a JSON object, so the store and database it names were not checked"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == broken)
    }
}
