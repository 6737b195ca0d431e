import FerryProtocol
import Testing
@testable import FerryHTTPCache

@Suite struct CacheModeTests {
    @Test func rawValuesAreTheFetchNames() {
        #expect(CacheMode.allCases.map(\.rawValue) == ["default", "no-store", "reload", "no-cache", "force-cache", "only-if-cached"])
        #expect(CacheMode(rawValue: "only-if-cached") == .onlyIfCached)
        #expect(CacheMode(rawValue: "No-Store") == nil)
    }

    @Test func capabilities() {
        #expect(CacheMode.allCases.filter(\.consultsCache) == [.default, .noCache, .forceCache, .onlyIfCached])
        #expect(CacheMode.allCases.filter(\.storesResponses) == [.default, .reload, .noCache, .forceCache, .onlyIfCached])
        #expect(CacheMode.allCases.filter(\.ignoresStaleness) == [.forceCache, .onlyIfCached])
        #expect(CacheMode.allCases.filter { !$0.mayUseNetwork } == [.onlyIfCached])
    }

    @Test func outgoingHeaders() {
        #expect(CacheMode.reload.outgoingHeaders([:]) == ["Pragma": "no-cache", "Cache-Control": "no-cache"])
        #expect(CacheMode.noStore.outgoingHeaders(["Cache-Control": "max-age=5"]) == ["Cache-Control": "max-age=5", "Pragma": "no-cache"])
        #expect(CacheMode.noCache.outgoingHeaders(["A": "1"]) == ["A": "1", "Cache-Control": "max-age=0"])
        #expect(CacheMode.noCache.outgoingHeaders(["cache-control": "no-cache"]) == ["cache-control": "no-cache"])
        #expect(CacheMode.default.outgoingHeaders(["A": "1"]) == ["A": "1"])
    }

    @Test func storedResponsesAreUsedOnlyByTheModesThatConsultTheCache() {
        let s = Fixture.stored(["Cache-Control": "max-age=60"])
        let now = Fixture.t0 + 1
        let decisions = CacheMode.allCases.map { evaluate(request: Fixture.request(mode: $0), stored: s, now: now) }
        #expect(decisions == [.fresh(age: 1), .mustFetch, .mustFetch, .mustFetch, .fresh(age: 1), .fresh(age: 1)])
    }
}
