import Testing
@testable import Runtime

/// The scheduler's concurrency and dependency bookkeeping, alone: no loop, no journal.
@Suite struct SlotTableTests {
    @Test func aRunHoldsItsSlotUntilItReturnsAndItsJobsUntilRecorded() {
        var t = SlotTable()
        #expect(t.free("s", concurrency: 2) == 2)
        t.started("s", jobs: 3)  // a batch
        #expect(t.free("s", concurrency: 2) == 1 && t.jobs(stage: "s") == 3 && t.jobCount == 3)
        t.returned("s")
        // The next run may start while the outcome is written; the jobs are still in flight.
        #expect(t.free("s", concurrency: 2) == 2 && t.jobCount == 3)
        t.ended("s", jobs: 3)
        #expect(t.jobCount == 0 && t.jobs(stage: "s") == 0)
    }

    @Test func anUnwrittenOutcomeAndAParkedJobEachHoldASlot() {
        var t = SlotTable()
        t.started("s", jobs: 1)
        t.returned("s")
        t.writeFailed("s")
        t.park("s")
        #expect(t.free("s", concurrency: 2) == 0, "a stage whose outcomes cannot be written starts no more runs")
        #expect(t.free("other", concurrency: 2) == 2)
        t.writeSettled("s")
        t.unpark("s")
        #expect(t.free("s", concurrency: 2) == 2)
    }

    @Test func aDependencyIsUpAgainOnceAStageThatFoundItDownGoesThrough() {
        var h = DependencyHealth()
        h.down("s3", reportedBy: "upload")
        h.down("journal")
        #expect(h.isDown("s3") && h.up == ["s3": false, "journal": false])
        #expect(h.wentThrough("index").isEmpty, "another stage says nothing of s3")
        #expect(h.wentThrough("upload") == ["s3"])
        #expect(h.wentThrough("upload").isEmpty, "said once")
        #expect(h.answers("journal") && !h.answers("journal"))
        #expect(h.up == ["s3": true, "journal": true])
    }
}
