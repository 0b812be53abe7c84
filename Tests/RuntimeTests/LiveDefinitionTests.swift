@testable import PhotomemoCore
@testable import StageKit
import Testing
@testable import Runtime

/// The one definition in force: a reload swaps every cell intake reads, or none.
@Suite struct LiveDefinitionTests {
    static func definition(name: String, join: Int, inbox: InboxOptions = InboxOptions(),
                           database: String = StageEnvironment.defaultDatabase) -> JobDefinition {
        JobDefinition(name: name, stages: [], retry: .default, joinTimeoutSeconds: join, source: name, database: database,
                      store: StageEnvironment.defaultStore, inbox: inbox)
    }

    @Test func aReloadReachesIntakeThroughTheSameCells() throws {
        let live = LiveDefinition(Self.definition(name: "a", join: 600))
        let intake = MemoIntake(photos: PhotoPolicy(inbox: "/nonexistent", allowedRoots: []), live: live, quota: nil)
        var inbox = InboxOptions()
        inbox.ignore = ["*.tmp"]
        var next = Self.definition(name: "b", join: 5, inbox: inbox)
        next.quota = Quota(records: 7)
        try live.replace(with: next)
        #expect(live.current.name == "b")
        #expect(live.quota.value == Quota(records: 7))  // the quota meter's limits
        #expect(intake.joinTimeoutSeconds.value == 5)
        #expect(intake.inbox.value.ignore == ["*.tmp"])
    }

    @Test func anotherDatabaseIsRefusedAndNothingChanges() throws {
        let live = LiveDefinition(Self.definition(name: "a", join: 600))
        #expect(throws: PhotomemoError.self) {
            try live.replace(with: Self.definition(name: "b", join: 5, database: "postgres://elsewhere/db"))
        }
        #expect(live.current.name == "a")
        #expect(live.joinTimeoutSeconds.value == 600)
    }
}
