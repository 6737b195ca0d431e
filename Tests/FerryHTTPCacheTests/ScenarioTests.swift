import Testing
@testable import FerryHTTPCache

/// The calls the daemon makes around one URL over time, end to end.
@Suite struct ScenarioTests {
    @Test func storeServeRevalidateFreshenInvalidate() {
        var clock = TestClock(now: Fixture.t0)
        let request = CacheRequest(url: "https://Shop.test/items?page=2#top", headers: ["Accept-Encoding": "gzip"])
        let response: HTTPFields = [
            "Date": Fixture.date(clock.now), "Cache-Control": "max-age=60", "ETag": "\"v1\"", "Vary": "Accept-Encoding",
            "Connection": "close", "Content-Length": "42",
        ]

        // Store.
        guard case .store(let key) = storageVerdict(request: request, status: 200, responseHeaders: response) else {
            Issue.record("expected a storable response")
            return
        }
        #expect(key == request.lookupKey)
        #expect(key.url == "https://shop.test/items?page=2")
        var entry = StoredResponse(storing: 200, headers: response, for: request, requestTime: clock.now - 1,
                                   responseTime: clock.now, bodySize: 42)
        #expect(!entry.headers.contains("connection"))

        // Serve fresh, with an Age that includes the response delay.
        clock.advance(30)
        #expect(evaluate(request: request, stored: entry, now: clock.now) == .fresh(age: 31))
        #expect(headersForServing(stored: entry, age: 31).first("age") == "31")

        // Another encoding is another variant.
        let brotli = CacheRequest(url: request.url, headers: ["Accept-Encoding": "br"])
        #expect(evaluate(request: brotli, stored: entry, now: clock.now) == .mustFetch)

        // Stale: validate with the ETag; the origin answers 304 with new freshness.
        clock.advance(60)
        let decision = evaluate(request: request, stored: entry, now: clock.now)
        #expect(decision == .validate(conditionalHeaders: ["If-None-Match": "\"v1\""]))
        let notModified: HTTPFields = ["Date": Fixture.date(clock.now), "Cache-Control": "max-age=600", "ETag": "\"v1\""]
        #expect(selectForUpdate(stored: [entry], notModified: notModified) == [0])
        entry = entry.updating(withNotModified: notModified, requestTime: clock.now, responseTime: clock.now)
        #expect(entry.headers.first("content-length") == "42")
        clock.advance(5)
        #expect(evaluate(request: request, stored: entry, now: clock.now) == .fresh(age: 5))

        // A client revalidating its own copy gets a 304 from the cache.
        let conditional = CacheRequest(url: request.url, headers: ["Accept-Encoding": "gzip", "If-None-Match": "W/\"v1\""])
        #expect(clientConditionMatches(request: conditional, stored: entry))

        // A successful POST to the same URL invalidates it.
        #expect(invalidatedURLs(requestMethod: "POST", requestURL: request.url, responseStatus: 200, responseHeaders: [:])
            == [key.url])
    }
}
