import Testing
@testable import FerryHTTPCache

@Suite struct FreshnessTests {
    let t0 = Fixture.t0
    func lifetime(_ h: HTTPFields, status: Int = 200, shared: Bool = true) -> (Int64, FreshnessSource) {
        let f = freshness(status: status, headers: h, responseTime: t0, sharedCache: shared)
        return (f.lifetime, f.source)
    }

    @Test func sMaxAgeBeatsMaxAgeBeatsExpires() {
        let all: HTTPFields = ["Date": Fixture.date(t0), "Expires": Fixture.date(t0 + 1000),
                               "Cache-Control": "max-age=100", "cache-control": "s-maxage=10"]
        #expect(lifetime(all) == (10, .sMaxAge))
        #expect(lifetime(all.removingAll("cache-control").appending("Cache-Control", "max-age=100")) == (100, .maxAge))
        #expect(lifetime(all.removingAll("cache-control")) == (1000, .expires))
    }

    @Test func sMaxAgeIsIgnoredByAPrivateCache() {
        #expect(lifetime(["Cache-Control": "s-maxage=10, max-age=100"], shared: false) == (100, .maxAge))
    }

    @Test func maxAgeBeatsPastOrInvalidExpires() {
        #expect(lifetime(["Cache-Control": "max-age=3600", "Expires": Fixture.date(t0 - 10_000)]).0 == 3600)
        #expect(lifetime(["Cache-Control": "max-age=3600", "Expires": "0"]).0 == 3600)
        #expect(lifetime(["Cache-Control": "max-age=0", "Expires": Fixture.date(t0 + 10_000)]).0 == 0)
    }

    @Test func expiresMinusDate() {
        #expect(lifetime(["Date": Fixture.date(t0 - 10), "Expires": Fixture.date(t0 + 10)]).0 == 20)
        #expect(lifetime(["Date": Fixture.date(t0 + 400), "Expires": Fixture.date(t0 + 300)]).0 == 0, "Expires before Date")
        #expect(lifetime(["Expires": Fixture.date(t0 + 50)]).0 == 50, "no Date: the response time")
        #expect(lifetime(["Date": "foo", "Expires": Fixture.date(t0 + 10)]).0 == 10, "invalid Date: the response time")
        #expect(lifetime(["Expires": Fixture.date(t0 + 50), "expires": Fixture.date(t0 + 5000)]).0 == 50, "first line")
    }

    @Test func invalidExpiresMeansExpiredAndPreventsHeuristics() {
        let h: HTTPFields = ["Expires": "0", "Date": Fixture.date(t0), "Last-Modified": Fixture.date(t0 - 100_000)]
        #expect(lifetime(h) == (0, .expires))
        #expect(lifetime(["Expires": "Thu, 18 Aug 2050 02:01:18 UTC"]) == (0, .expires))
    }

    @Test func invalidMaxAgeMakesTheResponseStaleAndPreventsHeuristics() {
        let h: HTTPFields = ["Cache-Control": "max-age=100a", "Last-Modified": Fixture.date(t0 - 100_000)]
        #expect(lifetime(h) == (0, .maxAge))
    }

    @Test func heuristicIsTenPercentOfTheLastModifiedAge() {
        let h: HTTPFields = ["Date": Fixture.date(t0), "Last-Modified": Fixture.date(t0 - 86_400)]
        #expect(lifetime(h) == (8640, .heuristic))
        #expect(lifetime(["Last-Modified": Fixture.date(t0 - 1000)]) == (100, .heuristic), "Date missing: response time")
    }

    @Test func heuristicOnlyForListedStatusesOrPublic() {
        let h: HTTPFields = ["Date": Fixture.date(t0), "Last-Modified": Fixture.date(t0 - 86_400)]
        for status in [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501] {
            #expect(lifetime(h, status: status).0 == 8640, "\(status)")
        }
        for status in [201, 202, 302, 303, 307, 400, 403, 500, 502, 503, 504, 599] {
            #expect(lifetime(h, status: status) == (0, .none), "\(status)")
        }
        #expect(lifetime(h.appending("Cache-Control", "public"), status: 599) == (8640, .heuristic))
    }

    @Test func heuristicNeedsAnEarlierValidLastModified() {
        #expect(lifetime(["Date": Fixture.date(t0)]) == (0, .none))
        #expect(lifetime(["Date": Fixture.date(t0), "Last-Modified": Fixture.date(t0 + 60)]) == (0, .none))
        #expect(lifetime(["Date": Fixture.date(t0), "Last-Modified": "yesterday"]) == (0, .none))
    }

    @Test func heuristicIsCapped() {
        let h: HTTPFields = ["Date": Fixture.date(t0), "Last-Modified": Fixture.date(t0 - 10 * 365 * 86_400)]
        #expect(lifetime(h).0 == heuristicLifetimeCap)
    }

    @Test func storedResponseLifetime() {
        #expect(freshnessLifetime(response: Fixture.stored(["Cache-Control": "max-age=60"])) == 60)
    }
}

@Suite struct AgeTests {
    let t0 = Fixture.t0

    @Test func residentTimeOnly() {
        let s = Fixture.stored(["Cache-Control": "max-age=60"])
        #expect(currentAge(stored: s, now: t0) == 0)
        #expect(currentAge(stored: s, now: t0 + 25) == 25)
    }

    @Test func ageHeaderPlusResponseDelayPlusResidentTime() {
        let s = Fixture.stored(["Age": "30", "Date": Fixture.date(t0)], delay: 2)
        #expect(currentAge(stored: s, now: t0 + 10) == 42)
    }

    @Test func apparentAgeFromASlowDate() {
        let s = Fixture.stored(["Date": Fixture.date(t0 - 100)])
        #expect(currentAge(stored: s, now: t0 + 5) == 105)
        let withAge = Fixture.stored(["Date": Fixture.date(t0 - 50), "Age": "10"], delay: 1)
        #expect(currentAge(stored: withAge, now: t0) == 50, "max(apparent 50, corrected 11)")
    }

    @Test func aDateInTheFutureGivesNoApparentAge() {
        let s = Fixture.stored(["Date": Fixture.date(t0 + 10), "Age": "15"])
        #expect(currentAge(stored: s, now: t0) == 15)
    }

    @Test func missingDateUsesTheResponseTime() {
        let s = StoredResponse(status: 200, headers: [:], requestTime: t0 - 3, responseTime: t0)
        #expect(currentAge(stored: s, now: t0 + 4) == 7)
    }

    @Test func invalidAgeIsIgnored() {
        for v in ["abc", "-7200", "7200.0", "", "1e3"] {
            #expect(ageValue(["Age": v]) == nil, "\(v)")
            #expect(currentAge(stored: Fixture.stored(["Age": v]), now: t0 + 1) == 1, "\(v)")
        }
    }

    @Test func listValuedAgeUsesTheFirstMember() {
        #expect(ageValue(["Age": "0, 7200"]) == 0)
        #expect(ageValue(["Age": "7200,0"]) == 7200)
        #expect(ageValue(["Age": "7200", "age": "0"]) == 7200)
        #expect(ageValue(["Age": "0", "age": "7200"]) == 0)
    }

    @Test func overflowingAgeIsCapped() {
        let s = Fixture.stored(["Age": "99999999999999"])
        #expect(currentAge(stored: s, now: t0 + 1_000_000) == 2_147_483_648)
    }

    @Test func aClockGoingBackwardsGivesNoNegativeResidentTime() {
        let s = Fixture.stored(["Age": "5"])
        #expect(currentAge(stored: s, now: t0 - 100) == 5)
    }
}
