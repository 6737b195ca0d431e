import Testing
@testable import FerryHTTPCache

@Suite struct StaleIfErrorTests {
    let t0 = Fixture.t0

    func allowed(_ cc: String, _ request: CacheRequest = Fixture.request(), at now: Int64, disconnected: Bool = false) -> Bool {
        staleIfErrorAllowed(stored: Fixture.stored(["Cache-Control": cc]), request: request, now: now, disconnected: disconnected)
    }

    @Test func responseStaleIfErrorWindow() {
        // Fresh until t0 + 60, then 300 s of stale-if-error.
        #expect(allowed("max-age=60, stale-if-error=300", at: t0 + 359))
        #expect(!allowed("max-age=60, stale-if-error=300", at: t0 + 360))
        #expect(!allowed("max-age=0, stale-if-error=1", at: t0 + 3), "elapsed")
    }

    @Test func plainStaleResponseIsNotServedOnA5xx() {
        #expect(!allowed("max-age=60", at: t0 + 61))
    }

    @Test func requestStaleIfErrorAndMaxStale() {
        #expect(allowed("max-age=0", Fixture.request(["Cache-Control": "stale-if-error=3600"]), at: t0 + 10))
        #expect(!allowed("max-age=0", Fixture.request(["Cache-Control": "stale-if-error=1"]), at: t0 + 3))
        #expect(allowed("max-age=0", Fixture.request(["Cache-Control": "max-stale=10"]), at: t0 + 10))
        #expect(!allowed("max-age=0", Fixture.request(["Cache-Control": "max-stale=10"]), at: t0 + 11))
    }

    @Test func explicitRevalidationDirectivesForbidIt() {
        #expect(!allowed("max-age=2, must-revalidate, stale-if-error=600", at: t0 + 10))
        #expect(!allowed("max-age=2, proxy-revalidate, stale-if-error=600", at: t0 + 10))
        #expect(!allowed("max-age=2, no-cache, stale-if-error=600", at: t0 + 10))
        #expect(!allowed("max-age=2, must-revalidate", at: t0 + 10, disconnected: true))
        #expect(!allowed("max-age=2, no-cache", at: t0 + 10, disconnected: true))
        #expect(!allowed("s-maxage=2", at: t0 + 10, disconnected: true))
    }

    @Test func sMaxAgeOnlyYieldsToTheOriginsOwnPermission() {
        #expect(allowed("s-maxage=2, stale-if-error=600", at: t0 + 10))
        #expect(!allowed("s-maxage=2", Fixture.request(["Cache-Control": "stale-if-error=600"]), at: t0 + 10))
        #expect(!allowed("s-maxage=2, stale-while-revalidate=5", Fixture.request(["Cache-Control": "max-stale"]), at: t0 + 10))
    }

    @Test func aDisconnectedCacheMayServeStale() {
        #expect(allowed("max-age=2", at: t0 + 10_000, disconnected: true))
        #expect(!allowed("max-age=2", at: t0 + 10_000, disconnected: false))
    }

    @Test func freshResponsesCanAlwaysBeServedUnlessNoCache() {
        #expect(allowed("max-age=600, must-revalidate", at: t0 + 10))
        #expect(!allowed("max-age=600, no-cache", at: t0 + 10))
    }

    @Test func modes() {
        #expect(allowed("max-age=1, must-revalidate", Fixture.request(mode: .forceCache), at: t0 + 1000))
        #expect(allowed("max-age=1", Fixture.request(mode: .onlyIfCached), at: t0 + 1000))
        #expect(!allowed("max-age=600", Fixture.request(mode: .reload), at: t0 + 1))
        #expect(!allowed("max-age=600", Fixture.request(mode: .noStore), at: t0 + 1))
    }

    @Test func variantMustStillMatch() {
        let s = Fixture.stored(["Cache-Control": "max-age=600", "Vary": "Accept"], request: Fixture.request(["Accept": "a"]))
        #expect(staleIfErrorAllowed(stored: s, request: Fixture.request(["Accept": "a"]), now: t0 + 1))
        #expect(!staleIfErrorAllowed(stored: s, request: Fixture.request(["Accept": "b"]), now: t0 + 1))
    }
}
