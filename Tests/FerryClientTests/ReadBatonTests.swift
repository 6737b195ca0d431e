import Testing
@testable import FerryClient

/// `ReadBaton`: who reads the connection's socket, walked through the reader thread's and the calls' steps.
@Suite struct ReadBatonTests {
    /// The baton behind a reference, so that its mutating steps can be asserted on directly.
    final class Baton {
        var value = ReadBaton()
        var holder: ReadBaton.Holder { value.holder }
        var lends: UInt64 { value.lends }
        var takes: UInt64 { value.takes }
        func lend() { value.lend() }
        func take() -> Bool { value.take() }
        func giveBack() { value.giveBack() }
        func returnedOnThread() { value.returnedOnThread() }
        func threadTurn(at ms: Int64) -> ReadBaton.Turn { value.threadTurn(nowNs: ms * 1_000_000) }
        func waitMs(at ms: Int64) -> Int32 { value.waitMs(nowNs: ms * 1_000_000) }
        func connectionClosing() { value.connectionClosing() }
        func close() { value.close() }
    }

    @Test func theReaderThreadReadsUntilItLendsTheBaton() {
        let baton = Baton()
        #expect(baton.threadTurn(at: 0) == .read)
        #expect(!baton.take(), "nothing lent: a returning call writes and leaves the reading to the thread")
        baton.lend()
        #expect(baton.holder == .lent)
        #expect(baton.threadTurn(at: 0) == .wait)
    }

    @Test func onlyOneCallTakesALentBaton() {
        let baton = Baton()
        baton.lend()
        #expect(baton.take())
        #expect(!baton.take())
        #expect(baton.holder == .inline)
        #expect(baton.takes == 1)
    }

    /// An inline reader that resumed calls lends the baton on; one that did not gives it back to the thread.
    @Test func anInlineReaderLendsOnOrGivesBack() {
        let baton = Baton()
        baton.lend()
        #expect(baton.take())
        baton.lend()
        #expect(baton.holder == .lent && baton.lends == 2)
        #expect(baton.take())
        baton.giveBack()
        #expect(baton.holder == .thread)
        #expect(baton.threadTurn(at: 0) == .read)
    }

    /// A lent baton unused for 1 ms by the clock comes back; one that keeps being passed on does not, however
    /// often the reader thread wakes.
    @Test func aLentBatonUnusedForAMillisecondComesBack() {
        let baton = Baton()
        baton.lend()
        #expect(baton.threadTurn(at: 10) == .wait, "the loan is seen")
        #expect(baton.waitMs(at: 10) == 1)
        #expect(baton.take())
        baton.lend()
        #expect(baton.threadTurn(at: 11) == .wait, "passed on meanwhile: the calls are running")
        #expect(baton.threadTurn(at: 11) == .wait, "woken again at once: not stale yet")
        #expect(baton.threadTurn(at: 12) == .read, "the same loan for 1 ms")
        #expect(baton.holder == .thread)
        #expect(!baton.take(), "the call that finally runs leaves the reading to the thread")
    }

    @Test func aBatonHeldInlineIsNeverTakenBackByTheThread() {
        let baton = Baton()
        baton.lend()
        #expect(baton.take())
        #expect(baton.threadTurn(at: 5) == .wait)
        #expect(baton.threadTurn(at: 5) == .wait)
        baton.connectionClosing()
        #expect(baton.threadTurn(at: 5) == .wait, "only its holder gives it back")
        #expect(baton.holder == .inline)
    }

    @Test func closingTakesALentBatonBackAtOnceAndLendsItNoMore() {
        let baton = Baton()
        baton.lend()
        baton.connectionClosing()
        #expect(baton.threadTurn(at: 0) == .read)
        #expect(baton.holder == .thread)
        baton.lend()
        #expect(baton.holder == .thread && baton.lends == 1)
    }

    @Test func anInlineReadersLoanWhileClosingGoesToTheReaderThread() {
        let baton = Baton()
        baton.lend()
        #expect(baton.take())
        baton.connectionClosing()
        baton.lend()
        #expect(baton.holder == .thread)
        #expect(baton.threadTurn(at: 0) == .read)
    }

    /// Tasks preferring the reader's executor: the last call returns on the reader thread, which reads on.
    @Test func theLastCallReturningOnTheReaderThreadEndsTheLoan() {
        let baton = Baton()
        baton.lend()
        baton.returnedOnThread()
        #expect(baton.holder == .thread)
        #expect(!baton.take())
    }

    @Test func aClosedBatonStaysClosed() {
        let baton = Baton()
        baton.lend()
        baton.close()
        #expect(!baton.take())
        baton.lend()
        baton.giveBack()
        baton.returnedOnThread()
        #expect(baton.holder == .closed)
        #expect(baton.threadTurn(at: 5) == .closed)
    }
}
