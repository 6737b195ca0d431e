import Testing
@testable import FerryFetch
import FerryProtocol

/// Who shares what: identical requests in flight share one exchange, but only a response the cache could have
/// stored for each of them (RFC 9111 §4); failures are shared; a waiter that leaves leaves the others alone.
@Suite struct CoalescingTests {
    @Test func identicalRequestsShareOneExchangeAndAStorableResponse() {
        let h = EngineHarness()
        let a = h.fetch("http://o.test/quote")
        let b = h.fetch("http://o.test/quote")
        #expect(h.origin.exchanges.count == 1, "the second joined the first")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=60")], body: "wisdom")
        #expect(a.outcome?.cache == .miss && a.text == "wisdom")
        #expect(b.outcome?.cache == .coalesced && b.text == "wisdom")
        #expect(h.engine.stats.coalesced == 1 && h.engine.stats.originRequests == 1)
        let c = h.fetch("http://o.test/quote")
        #expect(c.outcome?.cache == .hit && c.text == "wisdom" && h.origin.exchanges.count == 1, "then stored")
    }

    /// A request whose lookup was still reading when an identical transfer ended (the transfer gone from the
    /// groups, its response being stored) must not ask the origin again: it looks again and gets the stored
    /// response. (Seen in an integration run under load: a third client of a 1 GiB download, arriving at its end,
    /// made a second origin request.)
    @Test func aMissReadWhileTheTransferEndedLooksAgainInsteadOfFetchingTwice() {
        let h = EngineHarness()
        let a = h.fetch("http://o.test/late")
        h.storage.deferReads = true
        let b = h.fetch("http://o.test/late")   // its lookup reads the store as it is now: nothing
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=60")], body: "once")
        #expect(a.text == "once")
        for _ in 0..<4 { h.storage.answerReads() }
        #expect(h.origin.exchanges.count == 1, "no second exchange")
        #expect(b.text == "once" && b.outcome?.cache == .hit)
    }

    @Test func anUnstorableResponseIsNeverHandedToAnotherRequest() {
        let h = EngineHarness()
        let a = h.fetch("http://o.test/random")
        let b = h.fetch("http://o.test/random")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "no-store")], body: "first")
        #expect(a.text == "first")
        #expect(b.result == nil && h.origin.exchanges.count == 2, "the joiner asks the origin for itself")
        h.origin.exchanges[1].respond(200, [("Cache-Control", "no-store")], body: "second")
        #expect(b.text == "second" && b.outcome?.cache == .miss)
    }

    @Test func aPrivateResponseStaysWithWhoAskedForIt() {
        let h = EngineHarness()
        let a = h.fetch("http://o.test/me")
        let b = h.fetch("http://o.test/me")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "private, max-age=60")], body: "alice")
        #expect(a.text == "alice" && b.result == nil && h.origin.exchanges.count == 2)
    }

    @Test func differentHeadersOrModesDoNotShare() {
        let h = EngineHarness()
        h.fetch("http://o.test/x") { $0.headers = [("Accept", "text/a")] }
        h.fetch("http://o.test/x") { $0.headers = [("Accept", "text/b")] }
        h.fetch("http://o.test/x") { $0.cacheMode = .noStore }
        h.fetch("http://o.test/x") { $0.timeoutMs = 5 }
        h.fetch("http://o.test/x") { $0.method = "POST"; $0.body = [1] }
        #expect(h.origin.exchanges.count == 5)
        h.fetch("http://o.test/x") { $0.headers = [("accept", "text/a")] }
        #expect(h.origin.exchanges.count == 5, "header names compare case-insensitively")
    }

    @Test func aFailureIsSharedWithEveryWaiter() {
        let h = EngineHarness()
        let a = h.fetch("http://o.test/down")
        let b = h.fetch("http://o.test/down")
        h.origin.exchanges[0].fail(.unavailable(curlCode: 7, message: "Connection refused"))
        #expect(a.failure == .unavailable(curlCode: 7, message: "Connection refused"))
        #expect(b.failure == a.failure && h.origin.exchanges.count == 1, "no retry storm on a failing origin")
    }

    @Test func aWaiterThatLeavesLeavesTheOthersAndTheLastStopsTheExchange() {
        let h = EngineHarness()
        let a = h.fetch("http://o.test/slow")
        let b = h.fetch("http://o.test/slow")
        a.job?.cancel()
        #expect(!h.origin.exchanges[0].cancelled, "b still waits")
        b.job?.cancel()
        #expect(h.origin.exchanges[0].cancelled, "nobody waits: the exchange stops")
        h.fetch("http://o.test/slow")
        #expect(h.origin.exchanges.count == 2, "a later request starts afresh")
        #expect(a.result == nil && b.result == nil, "a cancelled job answers nobody")
    }

    @Test func anExchangeThatCannotStartFailsItsWaiter() {
        let h = EngineHarness()
        h.origin.refuseToStart = .internalError("curl_easy_init failed")
        let a = h.fetch("http://o.test/x")
        #expect(a.failure == .internalError("curl_easy_init failed"))
        h.origin.refuseToStart = nil
        h.fetch("http://o.test/x")
        #expect(h.origin.exchanges.count == 1, "the refused group was forgotten")
    }

    @Test func progressReachesOnlyTheJobsThatAskedForIt() {
        let h = EngineHarness()
        var seen: [Int] = []
        let a = h.fetch("http://o.test/big") { $0.progress = true }
        a.job?.onProgress = { received, _ in seen.append(received) }
        let quiet = h.fetch("http://o.test/big")
        var quietSeen = 0
        quiet.job?.onProgress = { _, _ in quietSeen += 1 }
        h.origin.exchanges[0].progress(10, 100)
        h.origin.exchanges[0].progress(10, 100)
        h.clock.advance(seconds: 1)
        h.origin.exchanges[0].progress(100, 100)
        #expect(seen == [10, 100], "only new byte counts")
        #expect(quietSeen == 0)
    }
}
