import Testing
@testable import FerryHTTPCache

@Suite struct StoredFactsTests {
    static let stored: [StoredResponse] = [
        StoredResponse(status: 200, headers: ["Cache-Control": "max-age=60", "Date": HTTPDate.format(1000)], requestTime: 998, responseTime: 1000),
        StoredResponse(status: 200, headers: ["Cache-Control": "max-age=60", "Age": "30", "Date": HTTPDate.format(990)], requestTime: 995, responseTime: 1000),
        StoredResponse(status: 200, headers: ["Expires": HTTPDate.format(1100), "Date": HTTPDate.format(1000)], requestTime: 1000, responseTime: 1000),
        StoredResponse(status: 200, headers: ["Last-Modified": HTTPDate.format(0), "Date": HTTPDate.format(1000)], requestTime: 1000, responseTime: 1000),
        StoredResponse(status: 200, headers: ["Cache-Control": "s-maxage=10, max-age=600, stale-while-revalidate=30", "Age": "-4"], requestTime: 1000, responseTime: 1000),
        StoredResponse(status: 404, headers: ["Cache-Control": "no-cache", "ETag": "\"a\"", "Date": "garbage"], requestTime: 1000, responseTime: 1000),
        StoredResponse(status: 200, headers: ["Cache-Control": "max-age=99999999999", "Age": "99999999999"], requestTime: 1000, responseTime: 1000),
    ]
    static let requests: [CacheRequest] = [
        CacheRequest(url: "http://a.test/"), CacheRequest(url: "http://a.test/", headers: ["Cache-Control": "max-age=20"]),
        CacheRequest(url: "http://a.test/", headers: ["Cache-Control": "min-fresh=50"]),
        CacheRequest(url: "http://a.test/", headers: ["Cache-Control": "max-stale=100"]),
    ]

    /// Facts made once decide every later request as the stored response's own headers do, at every age.
    @Test(arguments: 0..<stored.count)
    func factsDecideAsTheHeadersDo(_ k: Int) {
        let s = Self.stored[k], facts = StoredFacts(s)
        for now: Int64 in [900, 1000, 1005, 1029, 1030, 1059, 1060, 1099, 1100, 1200, 5000, 1 << 40] {
            #expect(facts.currentAge(now: now) == currentAge(stored: s, now: now), "now \(now)")
            #expect(facts.lifetime == freshnessLifetime(response: s))
            for r in Self.requests {
                let direct = evaluateFromHeaders(request: r, stored: s, now: now)
                #expect(evaluate(request: r, stored: s, now: now, facts: facts) == direct, "now \(now), \(r.headers)")
            }
        }
    }

    /// `evaluate` as it was before facts: every value read from the headers at the moment of the decision.
    func evaluateFromHeaders(request: CacheRequest, stored: StoredResponse, now: Int64) -> CacheDecision {
        guard request.mode.consultsCache, variantMatches(stored: stored, request: request) else { return .mustFetch }
        let age = currentAge(stored: stored, now: now)
        let cc = stored.cacheControl, rcc = request.cacheControl
        let conditional = conditionalHeaders(for: stored)
        let revalidate: CacheDecision = conditional.isEmpty ? .mustFetch : .validate(conditionalHeaders: conditional)
        if cc.noCache || rcc.noCache { return revalidate }
        if let maxAge = rcc.maxAge, maxAge == 0 || age > maxAge { return revalidate }
        let lifetime = freshnessLifetime(response: stored)
        if lifetime > age {
            if let minFresh = rcc.minFresh, lifetime - age < minFresh { return revalidate }
            return .fresh(age: age)
        }
        let staleness = age - lifetime
        if staleServingForbidden(cc, allowingExplicitPermission: cc.staleWhileRevalidate != nil || cc.staleIfError != nil) { return revalidate }
        if let maxStale = rcc.maxStale, staleness <= maxStale, cc.sMaxAge == nil { return .fresh(age: age) }
        if let swr = cc.staleWhileRevalidate, staleness < swr { return .staleWhileRevalidate(age: age) }
        return revalidate
    }
}
