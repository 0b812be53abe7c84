import ExecStage
import Foundation
import IndexStage
import NotifyStage
import StageKit
import Testing
import UploadStage
import ValidateStage

/// What the engine knows of a definition's stages comes from their declarations
/// (`Stage.photoLocal`, `Stage.readsMemo`), not from their names.
@Suite struct StageBoundsTests {
    let registry = StageRegistry([ValidateStage.self, ExecStage.self, UploadStage.self, IndexStage.self, NotifyStage.self])

    func load(_ uses: [String]) throws -> JobDefinition {
        let h = try StageHome()
        let stages = uses.map { $0 == "exec" ? #"{"use": "exec", "with": {"command": ["/bin/true"]}}"# : #"{"use": "\#($0)"}"# }
        let json = #"{"name": "t", "stages": [\#(stages.joined(separator: ","))]}"#
        return try JobDefinition.load(data: Data(json.utf8), source: "Jobs/t.json", registry: registry, environment: h.environment)
    }

    @Test func theUsualPipelineIsPhotoLocalUpToUploadAndReadsTheMemoFromIndexOn() throws {
        let def = try load(["validate", "upload", "index", "notify"])
        #expect(def.photoLocalEnd == 2 && def.memoStage == 2)
    }

    /// An exec stage (it reads the memo) before upload: upload still runs only where the
    /// photo is, and so does the exec stage before it; a late memo no longer joins at exec.
    @Test func aMemoReadingStageBeforeUploadLeavesUploadOnThePhotosHost() throws {
        let def = try load(["validate", "exec", "upload", "index"])
        #expect(def.photoLocalEnd == 3, "upload (index 2) must be claimed only where its photo is")
        #expect(def.memoStage == 1)
    }
}
