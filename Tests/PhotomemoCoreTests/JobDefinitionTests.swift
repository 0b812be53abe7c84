import Foundation
import TestSupport
import Testing
@testable import PhotomemoCore
@testable import StageKit

/// A stage for definition tests: declares options, does nothing else.
struct ProbeStage: Stage {
    static let name = "probe"
    static let summary = "test stage"
    static let workload = StageWorkload.io
    static let options = [
        StageOption("level", .integer, default: 3, "a number"),
        StageOption("tags", .stringList, "some tags"),
    ]
    let level: Int64
    init(options: StageOptions, environment: StageEnvironment) throws {
        level = options.int("level")!
        if level < 0 { throw PhotomemoError(.badDefinition, "level must be >= 0") }
    }
    func run(_ job: JobContext) -> StageOutcome { .continue() }
}

@Suite struct JobDefinitionTests {
    let registry = StageRegistry([ProbeStage.self])
    let env = StageEnvironment(home: URL(fileURLWithPath: "/tmp"))

    func load(_ json: String) throws -> JobDefinition {
        try JobDefinition.load(data: Data(json.utf8), source: "Jobs/x.json", registry: registry, environment: env)
    }

    func message(_ json: String) -> String {
        do { _ = try load(json); return "loaded" } catch let e as PhotomemoError { return e.message } catch { return "\(error)" }
    }

    @Test func loadsStagesWithDefaultsRetryAndConcurrency() throws {
        let d = try load(#"{"name":"t","stages":[{"use":"probe","with":{"tags":["a"]},"concurrency":3}],"retry":{"max_attempts":2},"join_timeout_s":5}"#)
        #expect(d.name == "t")
        #expect(d.stages.map(\.name) == ["probe"])
        #expect(d.stages[0].concurrency == 3)
        #expect((d.stages[0].stage as! ProbeStage).level == 3)
        #expect(d.retry == RetryPolicy(maxAttempts: 2, baseMs: 500, maxMs: 60_000))
        #expect(d.joinTimeoutSeconds == 5)
    }

    @Test func errorsNameTheFileTheKeyAndTheValidChoices() {
        #expect(message(#"{"name":"t","stages":[{"use":"compress"}]}"#)
            == #"Jobs/x.json: stages[0]: unknown stage "compress"; valid stages: probe"#)
        #expect(message(#"{"name":"t","stages":[{"use":"probe","with":{"levle":1}}]}"#)
            == #"Jobs/x.json: stages[0] (probe): unknown option "levle"; valid options: level, tags"#)
        #expect(message(#"{"name":"t","stages":[{"use":"probe","with":{"level":"high"}}]}"#)
            .contains(#"option "level" must be integer, got string"#))
        #expect(message(#"{"name":"t","stages":[{"use":"probe","with":{"level":-1}}]}"#).contains("level must be >= 0"))
        #expect(message(#"{"name":"t","stagez":[]}"#).contains(#"unknown key "stagez"; valid keys: name, stages, retry, join_timeout_s"#))
        #expect(message(#"{"name":"t","stages":[{"use":"probe","retries":1}]}"#).contains(#"unknown key "retries""#))
        #expect(message(#"{"name":"t","stages":[{"use":"probe"},{"use":"probe"}]}"#).contains("appears twice"))
        #expect(message(#"{"name":"t","stages":[]}"#).contains("non-empty"))
        #expect(message(#"{"name":"t","stages":[{"use":"probe"}],"retry":{"max_attempts":0}}"#).contains("positive integer"))
        #expect(message("{nope").contains("Jobs/x.json"))
    }

    /// `"quota"`: per-user limits, none by default; a bad one names the key.
    @Test func quotaIsOptionalAndChecked() throws {
        #expect(try load(#"{"name":"t","stages":[{"use":"probe"}]}"#).quota == Quota())
        #expect(try load(#"{"name":"t","stages":[{"use":"probe"}],"quota":{"records":10,"bytes":1048576}}"#).quota
            == Quota(records: 10, bytes: 1_048_576))
        #expect(message(#"{"name":"t","stages":[{"use":"probe"}],"quota":{"records":0}}"#).contains("quota.records must be a positive integer"))
        #expect(message(#"{"name":"t","stages":[{"use":"probe"}],"quota":{"files":3}}"#).contains(#"quota: unknown key "files"; valid keys: records, bytes"#))
        // `memory_mb`, the decode memory budget, the same way.
        #expect(try load(#"{"name":"t","stages":[{"use":"probe"}],"memory_mb":512}"#).memoryMB == 512)
        #expect(message(#"{"name":"t","stages":[{"use":"probe"}],"memory_mb":0}"#).contains(#""memory_mb" must be a positive integer"#))
    }

    @Test func builtInDefaultIsTheShippedJobsFile() throws {
        let file = try Data(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"))
        #expect(try JSONValue.parse(file) == JSONValue.parse(JobDefinition.builtinDefaultJSON))
    }
}
