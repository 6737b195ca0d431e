import Testing
@testable import FerryFetch

/// Fair shares of transfer slots (issue 10, item 5): the pure scheduler, then the transport that applies it over a
/// fake origin that counts what reaches it.
@Suite struct SlotSchedulerTests {
    @Test func oneClientTakesAtMostItsShareAndTheOthersGetTheRest() {
        var slots = SlotScheduler(capacity: 4)  // a share is 2
        let starts = (1...5).map { slots.request(UInt64($0), owner: 7, deadlineMs: nil, now: 0) }
        #expect(starts == [.start, .start, .wait, .wait, .wait])
        #expect(slots.request(10, owner: 8, deadlineMs: nil, now: 0) == .start, "a second client finds a slot at once")
        #expect(slots.request(11, owner: 8, deadlineMs: nil, now: 0) == .start)
        #expect(slots.request(12, owner: 9, deadlineMs: nil, now: 0) == .wait, "all four busy")
        // A slot of client 8 frees: client 9 holds none and goes first, though client 7 waited longer.
        #expect(slots.finished(owner: 8).map(\.id) == [12])
        #expect(slots.finished(owner: 9).map(\.id) == [], "client 7 is at its share; the slot stays free")
        #expect(slots.request(13, owner: 9, deadlineMs: nil, now: 0) == .start)
        #expect(slots.finished(owner: 7).map(\.id) == [3], "client 7's own slot goes to its next request")
    }

    @Test func waitingRequestsRunOutOfTimeInTheQueue() {
        var slots = SlotScheduler(capacity: 1)
        #expect(slots.request(1, owner: 1, deadlineMs: nil, now: 0) == .start)
        #expect(slots.request(2, owner: 2, deadlineMs: 5_000, now: 0) == .wait)
        #expect(slots.request(3, owner: 3, deadlineMs: 9_000, now: 1_000) == .wait)
        #expect(slots.nextDeadlineMs == 5_000)
        #expect(slots.expire(now: 4_999) == [])
        #expect(slots.expire(now: 5_000) == [2])
        #expect(slots.nextDeadlineMs == 9_000 && slots.waitingCount == 1)
        #expect(slots.cancelWaiting(3) && !slots.cancelWaiting(3))
        #expect(slots.finished(owner: 1).isEmpty && slots.activeCount == 0)
        #expect(SlotScheduler.remainingMs(5_000, queuedAtMs: 1_000, now: 4_000) == 2_000)
        #expect(SlotScheduler.remainingMs(5_000, queuedAtMs: 1_000, now: 6_000) == nil)
    }
}

@Suite struct FairTransportTests {
    final class Clock: @unchecked Sendable { var ms: Int64 = 0 }

    func spool() -> BodySpool { BodySpool(config: .init(directory: nil)) }
    func ignore() -> OriginEvents { OriginEvents(head: { _ in }, done: { _ in }) }

    func request(owner: UInt64, timeoutMs: Int? = nil) -> OriginRequest {
        OriginRequest(url: "http://a.test/\(owner)", method: "GET", headers: [], body: [], timeoutMs: timeoutMs,
                      maxBytes: 1 << 20, owner: owner)
    }

    /// 70 requests of one client that never end hold half the slots; another client's request starts at once, and
    /// its time in the queue counts when it has to wait.
    @Test func aHogLeavesSlotsAndQueueTimeCountsAgainstTheDeadline() throws {
        let clock = Clock()
        let origin = FakeOrigin(clock: TestClock())
        let fair = FairTransport(origin, loop: nil, capacity: 64, defaultTimeoutMs: 300_000, now: { clock.ms })
        var results: [UInt64: Result<OriginTiming, FetchFailure>] = [:]
        for n in 0..<70 { _ = try fair.start(request(owner: 1), body: spool(), events: OriginEvents(head: { _ in }, done: { results[UInt64(n)] = $0 })) }
        #expect(origin.exchanges.count == 32 && fair.waitingTransfers == 38, "the hog holds its share, the rest of its requests wait")
        _ = try fair.start(request(owner: 2, timeoutMs: 5_000), body: spool(), events: OriginEvents(head: { _ in }, done: { results[100] = $0 }))
        #expect(origin.exchanges.count == 33 && origin.exchanges.last?.request.owner == 2, "a healthy fetch starts at once")

        // Fill the other half, then a request that has to wait: it fails in the queue when its 5 s are up.
        for n in 0..<31 { _ = try fair.start(request(owner: UInt64(10 + n)), body: spool(), events: ignore()) }
        #expect(origin.exchanges.count == 64)
        _ = try fair.start(request(owner: 3, timeoutMs: 5_000), body: spool(), events: OriginEvents(head: { _ in }, done: { results[200] = $0 }))
        clock.ms = 4_000
        fair.expireWaiting()
        #expect(results[200] == nil)
        clock.ms = 5_000
        fair.expireWaiting()
        guard case .failure(.timeout)? = results[200] else { Issue.record("\(String(describing: results[200]))"); return }
        #expect(origin.exchanges.count == 64, "it never reached the origin")

        // One that waited 3 s of its 5 gets the 2 s left when a slot frees, ahead of the hog's waiting 38.
        _ = try fair.start(request(owner: 4, timeoutMs: 5_000), body: spool(), events: ignore())
        clock.ms = 8_000
        origin.exchanges[40].respond(200)
        #expect(origin.exchanges.count == 65 && origin.exchanges.last?.request.owner == 4)
        #expect(origin.exchanges.last?.request.timeoutMs == 2_000)
    }

    @Test func cancellingFreesTheSlotOrTheQueuePlace() throws {
        let origin = FakeOrigin(clock: TestClock())
        let fair = FairTransport(origin, loop: nil, capacity: 2, defaultTimeoutMs: 300_000, now: { 0 })
        let first = try fair.start(request(owner: 1), body: spool(), events: ignore())
        _ = try fair.start(request(owner: 2), body: spool(), events: ignore())
        let waiting = try fair.start(request(owner: 3), body: spool(), events: ignore())
        let next = try fair.start(request(owner: 4), body: spool(), events: ignore())
        _ = next
        waiting.cancel()
        #expect(fair.waitingTransfers == 1)
        first.cancel()
        #expect(origin.exchanges[0].cancelled && origin.exchanges.count == 3 && origin.exchanges[2].request.owner == 4)
    }
}

/// An origin whose first exchange ends inside `start` (as `CurlMulti.add` does when it cannot add the handle), the
/// others stay open: a late cancel of the first must not give its slot back twice.
@Suite struct FairTransportEarlyDoneTests {
    final class InstantThenOpen: OriginTransport {
        final class Open: OriginExchange { func cancel() {} }
        private(set) var started = 0
        func start(_ request: OriginRequest, body: BodySpool, events: OriginEvents) throws(FetchFailure) -> OriginExchange {
            started += 1
            if started == 1 { events.done(.failure(.unavailable(curlCode: 0, message: "refused at once"))) }
            return Open()
        }
        var activeTransfers: Int { 0 }
        func close() {}
    }

    @Test func anExchangeThatEndedBeforeStartReturnedReleasesItsSlotOnce() throws {
        let origin = InstantThenOpen()
        let fair = FairTransport(origin, loop: nil, capacity: 1, defaultTimeoutMs: 300_000, now: { 0 })
        func request(_ owner: UInt64) -> OriginRequest {
            OriginRequest(url: "http://a.test/", method: "GET", headers: [], body: [], timeoutMs: nil, maxBytes: 1, owner: owner)
        }
        let spool = BodySpool(config: .init(directory: nil))
        let ignore = OriginEvents(head: { _ in }, done: { _ in })
        let first = try fair.start(request(1), body: spool, events: ignore)
        _ = try fair.start(request(2), body: spool, events: ignore)
        #expect(origin.started == 2, "the slot came back when the first ended")
        first.cancel()  // after its end: nothing to give back
        _ = try fair.start(request(3), body: spool, events: ignore)
        #expect(origin.started == 2 && fair.waitingTransfers == 1, "one slot, held by the second: the third waits")
    }
}
