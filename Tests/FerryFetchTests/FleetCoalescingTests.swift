import Testing
@testable import FerryFetch
import FerryHTTPCache

/// Coalescing across machines, with a fake fleet that counts what it is asked and answers when a test says: who
/// claims (cold misses of shared responses only, once per group), what waits for the verdict, and when the lease
/// goes back (after the response is in the storage, also when the fetch failed or was abandoned).
@Suite struct FleetCoalescingTests {
    final class FakeFleet: FleetCoalescing {
        var claims: [(key: String, waitMs: Int, decided: (FleetVerdict) -> Void)] = []
        var released: [String] = []
        /// What the storage held for the key when it was released.
        var storedAtRelease: [Bool] = []
        weak var storage: MemoryStorage?

        func claim(_ key: String, waitMs: Int, _ decided: @escaping (FleetVerdict) -> Void) { claims.append((key, waitMs, decided)) }
        func release(_ key: String) {
            released.append(key)
            storedAtRelease.append(storage?.records[key] != nil)
        }
    }

    func harness() -> (EngineHarness, FakeFleet) {
        let h = EngineHarness()
        let fleet = FakeFleet()
        fleet.storage = h.storage
        h.engine.fleet = fleet
        return (h, fleet)
    }

    @Test func theLeaseholderFetchesOnceForItsDaemonAndReleasesAfterStoring() {
        let (h, fleet) = harness()
        let a = h.fetch("http://o.test/cold") { $0.timeoutMs = 7_000 }
        let b = h.fetch("http://o.test/cold") { $0.timeoutMs = 7_000 }
        #expect(fleet.claims.count == 1 && fleet.claims[0].key == "GET http://o.test/cold" && fleet.claims[0].waitMs == 7_000)
        #expect(h.origin.exchanges.isEmpty, "nobody asks the origin before the fleet decided")
        fleet.claims[0].decided(.fetch(leased: true))
        #expect(h.origin.exchanges.count == 1)
        #expect(fleet.released.isEmpty, "held while the fetch runs")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=60")], body: "once")
        #expect(a.text == "once" && b.text == "once" && b.outcome?.cache == .coalesced)
        #expect(fleet.released == ["GET http://o.test/cold"] && fleet.storedAtRelease == [true], "released once stored")
    }

    @Test func anotherMachinesResponseIsLookedUpAgainAndServedWithoutTheOrigin() {
        let (h, fleet) = harness()
        let a = h.fetch("http://o.test/shared")
        let b = h.fetch("http://o.test/shared")
        // The other machine fetched and stored it in the shared tier, which this storage reads through.
        let other = EngineHarness()
        other.fetch("http://o.test/shared")
        other.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=60")], body: "theirs")
        for (key, value) in other.storage.records { h.storage.put(key, value) }
        fleet.claims[0].decided(.lookAgain)
        #expect(a.text == "theirs" && b.text == "theirs" && a.outcome?.cache == .hit)
        #expect(h.origin.exchanges.isEmpty && h.engine.stats.fleetLookAgain == 1 && fleet.claims.count == 1)
    }

    @Test func lookingAgainAndFindingNothingFetchesWithoutWaitingASecondTime() {
        let (h, fleet) = harness()
        let a = h.fetch("http://o.test/uncacheable")
        fleet.claims[0].decided(.lookAgain)
        #expect(fleet.claims.count == 1, "one wait per hop")
        #expect(h.origin.exchanges.count == 1)
        h.origin.exchanges[0].respond(200, [("Cache-Control", "no-store")], body: "mine")
        #expect(a.text == "mine" && fleet.released.isEmpty, "no lease to give back")
    }

    @Test func onlyColdSharedGETsClaim() {
        let (h, fleet) = harness()
        h.fetch("http://o.test/x") { $0.headers = [("Authorization", "Bearer t")] }
        h.fetch("http://o.test/x") { $0.method = "POST"; $0.body = [1] }
        h.fetch("http://o.test/x") { $0.cacheMode = .noStore }
        h.fetch("http://o.test/x") { $0.method = "HEAD" }
        #expect(fleet.claims.isEmpty && h.origin.exchanges.count == 4)
        // A stored response that needs validation is this machine's to validate.
        h.fetch("http://o.test/etag")
        fleet.claims[0].decided(.fetch(leased: false))
        h.origin.exchanges[4].respond(200, [("Cache-Control", "no-cache"), ("ETag", "\"v1\"")], body: "v1")
        h.fetch("http://o.test/etag")
        #expect(fleet.claims.count == 1 && h.origin.exchanges.count == 6)
        #expect(h.origin.exchanges[5].header("If-None-Match") == "\"v1\"")
    }

    @Test func theLeaseGoesBackWhenTheFetchFailsOrNobodyWaitsAnyMore() {
        let (h, fleet) = harness()
        let a = h.fetch("http://o.test/down")
        fleet.claims[0].decided(.fetch(leased: true))
        h.origin.exchanges[0].fail(.unavailable(curlCode: 7, message: "refused"))
        #expect(a.failure != nil && fleet.released == ["GET http://o.test/down"] && fleet.storedAtRelease == [false])

        let b = h.fetch("http://o.test/gone")
        b.job?.cancel()
        fleet.claims[1].decided(.fetch(leased: true))
        #expect(h.origin.exchanges.count == 1, "nobody left to fetch for")
        #expect(fleet.released == ["GET http://o.test/down", "GET http://o.test/gone"])
        #expect(h.fetch("http://o.test/gone").result == nil && fleet.claims.count == 3, "a later request claims anew")
    }

    @Test func aTransportRefusalAnswersEveryWaiterAndReleases() {
        let (h, fleet) = harness()
        let a = h.fetch("http://o.test/r"), b = h.fetch("http://o.test/r")
        h.origin.refuseToStart = .unavailable(curlCode: 6, message: "no such host")
        fleet.claims[0].decided(.fetch(leased: true))
        #expect(a.failure != nil && b.failure != nil && fleet.released.count == 1)
    }
}

/// The claim's lifecycle alone, on a clock the test moves.
@Suite struct LeaseClaimTests {
    @Test func wonIsAFetchThatHoldsTheLease() {
        var claim = LeaseClaim(deadline: 10_000)
        #expect(claim.decide(.answered(.won), now: 0) == .verdict(.fetch(leased: true)) && !claim.tookOver)
        #expect(claim.decide(.notified, now: 1) == nil, "decided once")
    }

    @Test func heldElsewhereWaitsForTheReleaseThenLooksAgain() {
        var claim = LeaseClaim(deadline: 10_000)
        #expect(claim.decide(.answered(.heldFor(ms: 5_000)), now: 100) == .wakeAt(5_101))
        #expect(claim.decide(.notified, now: 900) == .verdict(.lookAgain))
        #expect(claim.decide(.tick, now: 5_101) == nil)
    }

    @Test func aHolderThatDiedIsTakenOverWhenItsLeaseExpires() {
        var claim = LeaseClaim(deadline: 60_000)
        _ = claim.decide(.answered(.heldFor(ms: 5_000)), now: 0)
        #expect(claim.decide(.tick, now: 3_000) == .wakeAt(5_001), "woken early: sleeps on")
        #expect(claim.decide(.tick, now: 5_001) == .ask)
        #expect(claim.decide(.answered(.won), now: 5_002) == .verdict(.fetch(leased: true)) && claim.tookOver)
    }

    @Test func theDeadlineEndsTheWaitWithAFetchOfItsOwn() {
        var claim = LeaseClaim(deadline: 2_000)
        #expect(claim.decide(.answered(.heldFor(ms: 5_000)), now: 0) == .wakeAt(2_000))
        #expect(claim.decide(.tick, now: 2_000) == .verdict(.fetch(leased: false)))
        var late = LeaseClaim(deadline: 2_000)
        #expect(late.decide(.answered(.heldFor(ms: 5_000)), now: 2_500) == .verdict(.fetch(leased: false)))
    }

    @Test func storedMeanwhileAndUnavailable() {
        var a = LeaseClaim(deadline: 1_000)
        #expect(a.decide(.answered(.storedMeanwhile), now: 0) == .verdict(.lookAgain))
        var b = LeaseClaim(deadline: 1_000)
        _ = b.decide(.answered(.heldFor(ms: 100)), now: 0)
        #expect(b.decide(.unavailable, now: 10) == .verdict(.fetch(leased: false)))
    }

    @Test func aLeaseWonAfterTheReleaseWasHeardIsGivenBack() {
        var claim = LeaseClaim(deadline: 10_000)
        #expect(claim.decide(.notified, now: 0) == .verdict(.lookAgain))
        #expect(claim.decide(.answered(.won), now: 1) == .release)
        var other = LeaseClaim(deadline: 10_000)
        _ = other.decide(.notified, now: 0)
        #expect(other.decide(.answered(.heldFor(ms: 9)), now: 1) == nil)
    }
}
