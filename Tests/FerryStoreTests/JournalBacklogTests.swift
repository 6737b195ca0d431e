import Testing
@testable import FerryStore

/// The loop's measure of what journaled sets hold in memory: what it handed over and the worker has not taken yet,
/// plus what the worker's pending sets hold once newer values replaced older ones (not every record ever handed).
@Suite struct JournalBacklogTests {
    @Test func heldIsWhatWaitsForTheWorkerPlusWhatItsPendingSetsHold() {
        let backlog = JournalBacklog()
        #expect(backlog.held(handedOff: 0) == 0)
        #expect(backlog.held(handedOff: 500) == 500, "nothing taken yet: all of it waits")
        backlog.accepted(cost: 300, pendingBytes: 100)  // three records taken, one key's value replaced another's
        #expect(backlog.held(handedOff: 500) == 300)
        backlog.accepted(cost: 200, pendingBytes: 150)
        #expect(backlog.held(handedOff: 500) == 150, "all taken: only the pending values are held")
        backlog.applied()
        #expect(backlog.held(handedOff: 500) == 0)
        #expect(backlog.held(handedOff: 800) == 300)
    }
}
