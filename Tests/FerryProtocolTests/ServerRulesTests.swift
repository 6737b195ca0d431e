import Testing
@testable import FerryProtocol

@Suite struct BackpressureTests {
    @Test func pausesAboveHighAndResumesAtLow() {
        var bp = Backpressure(high: 100, low: 20)
        #expect(bp.update(pendingBytes: 100) == .none, "at the mark is not past it")
        #expect(bp.update(pendingBytes: 101) == .pause)
        #expect(bp.isPaused)
        #expect(bp.update(pendingBytes: 500) == .none)
        #expect(bp.update(pendingBytes: 21) == .none, "hysteresis: still above low")
        #expect(bp.update(pendingBytes: 20) == .resume)
        #expect(!bp.isPaused)
        #expect(bp.update(pendingBytes: 50) == .none)
    }
}

@Suite struct RequestGateTests {
    typealias S = RequestGate.Situation

    @Test func helloFirst() {
        #expect(RequestGate.decide(op: "ping", S(phase: .awaitingHello)) == .reject(WireError(.failedPrecondition, "send hello first")))
        #expect(RequestGate.decide(op: "hello", S(phase: .awaitingHello)) == .admit)
        #expect(RequestGate.decide(op: "ping", S(phase: .ready)) == .admit)
    }

    @Test func duplicateIdClosesTheConnectionWhateverElseHolds() {
        guard case .closeConnection(let e) = RequestGate.decide(op: "ping", S(phase: .ready, serverDraining: true, idInFlight: true)) else {
            Issue.record("a duplicate id must close the connection")
            return
        }
        #expect(e.code == .protocolError)
    }

    @Test func unknownOperation() {
        guard case .reject(let e) = RequestGate.decide(op: "nope", S(phase: .ready, operationKnown: false)) else {
            Issue.record("unknown op must be a call error")
            return
        }
        #expect(e.code == .unimplemented && e.details?["op"] == "nope")
    }

    @Test func drainingRefusesNewWork() {
        guard case .reject(let e) = RequestGate.decide(op: "ping", S(phase: .ready, serverDraining: true)) else {
            Issue.record("draining must refuse")
            return
        }
        #expect(e.code == .unavailable)
        #expect(RequestGate.decide(op: "cancel", S(phase: .ready, serverDraining: true)) == .admit,
                "cancel still works during the drain, to shorten it")
    }

    @Test func echoedOperationNamesAreCutShort() {
        guard case .reject(let e) = RequestGate.decide(op: String(repeating: "x", count: 100_000), S(phase: .ready, operationKnown: false)) else {
            Issue.record("unknown op must be a call error")
            return
        }
        #expect(e.message.utf8.count < 300)
        #expect((e.details?["op"]?.stringValue?.utf8.count ?? 0) < 200)
    }

    @Test func inFlightLimitsButCancelIsExempt() {
        let full = S(phase: .ready, connectionInFlight: 4, maxConnectionInFlight: 4)
        guard case .reject(let e) = RequestGate.decide(op: "ping", full) else {
            Issue.record("over the limit must refuse")
            return
        }
        #expect(e.code == .resourceExhausted)
        #expect(RequestGate.decide(op: "cancel", full) == .admit)
        let total = S(phase: .ready, connectionInFlight: 0, totalInFlight: 10, maxTotalInFlight: 10)
        if case .reject(let t) = RequestGate.decide(op: "ping", total) { #expect(t.code == .resourceExhausted) } else {
            Issue.record("over the total limit must refuse")
        }
    }
}

@Suite struct UploadTableTests {
    let envelope = RequestEnvelope(id: 7, op: "cache.set", args: ["key": "k"], more: true)

    @Test func partsAreJoinedInOrder() {
        var t = UploadTable()
        let first = t.begin(envelope, firstPart: [1, 2], limit: 10)
        #expect(first == .pending)
        #expect(t.contains(7) && t.heldBytes == 2)
        let second = t.next(ContinuationEnvelope(id: 7, more: true), body: [3])
        #expect(second == .pending)
        let last = t.next(ContinuationEnvelope(id: 7, more: false), body: [4, 5])
        #expect(last == .complete(envelope, [1, 2, 3, 4, 5]))
        #expect(t.isEmpty && t.heldBytes == 0)
    }

    @Test func overTheLimitFailsOnceAndDropsTheRest() {
        var t = UploadTable()
        let first = t.begin(envelope, firstPart: [1, 2, 3], limit: 4)
        #expect(first == .pending)
        guard case .failed(let e) = t.next(ContinuationEnvelope(id: 7, more: true), body: [4, 5]) else {
            Issue.record("expected a failure")
            return
        }
        #expect(e.code == .resourceExhausted)
        #expect(t.heldBytes == 0)
        let later = t.next(ContinuationEnvelope(id: 7, more: true), body: [6])
        let last = t.next(ContinuationEnvelope(id: 7, more: false), body: [7])
        #expect(later == .dropped && last == .dropped)
        #expect(t.isEmpty, "the last part ends the discarding")
    }

    @Test func aDroppedIdCanBeUsedAgain() {
        var t = UploadTable()
        _ = t.begin(envelope, firstPart: [1, 2, 3], limit: 2)  // refused: its later parts are to be dropped
        let stray = t.next(ContinuationEnvelope(id: 7, more: true), body: [4])
        #expect(stray == .dropped)
        t.newRequest(7)  // the client moved on and reuses the id
        let again = t.begin(envelope, firstPart: [9], limit: 10)
        let last = t.next(ContinuationEnvelope(id: 7, more: false), body: [8])
        #expect(again == .pending && last == .complete(envelope, [9, 8]))
    }

    @Test func unknownIdsAndCancel() {
        var t = UploadTable()
        guard case .failed(let e) = t.next(ContinuationEnvelope(id: 9, more: false), body: []) else {
            Issue.record("a part for no upload is an error")
            return
        }
        #expect(e.code == .invalidArgument)
        _ = t.begin(envelope, firstPart: [1], limit: 10)
        let cancelled = t.cancel(7)
        let again = t.cancel(7)
        #expect(cancelled && !again)
        let part = t.next(ContinuationEnvelope(id: 7, more: false), body: [2])
        #expect(part == .dropped)
        #expect(t.isEmpty)
    }
}
