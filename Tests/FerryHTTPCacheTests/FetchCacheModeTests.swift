import Testing
@testable import FerryHTTPCache

@Suite struct FetchCacheModeTests {
    @Test func rawValuesAreTheFetchNames() {
        #expect(FetchCacheMode.allCases.map(\.rawValue) == ["default", "no-store", "reload", "no-cache", "force-cache", "only-if-cached"])
        #expect(FetchCacheMode(rawValue: "only-if-cached") == .onlyIfCached)
        #expect(FetchCacheMode(rawValue: "No-Store") == nil)
    }

    @Test func capabilities() {
        #expect(FetchCacheMode.allCases.filter(\.consultsCache) == [.default, .noCache, .forceCache, .onlyIfCached])
        #expect(FetchCacheMode.allCases.filter(\.storesResponses) == [.default, .reload, .noCache, .forceCache, .onlyIfCached])
        #expect(FetchCacheMode.allCases.filter(\.ignoresStaleness) == [.forceCache, .onlyIfCached])
        #expect(FetchCacheMode.allCases.filter { !$0.mayUseNetwork } == [.onlyIfCached])
    }

    @Test func outgoingHeaders() {
        #expect(FetchCacheMode.reload.outgoingHeaders([:]) == ["Pragma": "no-cache", "Cache-Control": "no-cache"])
        #expect(FetchCacheMode.noStore.outgoingHeaders(["Cache-Control": "max-age=5"]) == ["Cache-Control": "max-age=5", "Pragma": "no-cache"])
        #expect(FetchCacheMode.noCache.outgoingHeaders(["A": "1"]) == ["A": "1", "Cache-Control": "max-age=0"])
        #expect(FetchCacheMode.noCache.outgoingHeaders(["cache-control": "no-cache"]) == ["cache-control": "no-cache"])
        #expect(FetchCacheMode.default.outgoingHeaders(["A": "1"]) == ["A": "1"])
    }

    @Test func storedResponsesAreUsedOnlyByTheModesThatConsultTheCache() {
        let s = Fixture.stored(["Cache-Control": "max-age=60"])
        let now = Fixture.t0 + 1
        let decisions = FetchCacheMode.allCases.map { evaluate(request: Fixture.request(mode: $0), stored: s, now: now) }
        #expect(decisions == [.fresh(age: 1), .mustFetch, .mustFetch, .mustFetch, .fresh(age: 1), .fresh(age: 1)])
    }
}
