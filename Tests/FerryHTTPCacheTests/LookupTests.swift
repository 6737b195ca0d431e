import FerryProtocol
import Testing
@testable import FerryHTTPCache

@Suite struct LookupTests {
    let t0 = Fixture.t0
    let etagged: HTTPFields = ["Cache-Control": "max-age=100", "ETag": "\"v1\""]

    func decide(_ stored: StoredResponse, _ request: CacheRequest = Fixture.request(), at clock: TestClock) -> CacheDecision {
        evaluate(request: request, stored: stored, now: clock.now)
    }

    var validateV1: CacheDecision { .validate(conditionalHeaders: ["If-None-Match": "\"v1\""]) }

    @Test func freshThenStaleAsTheClockMoves() {
        let s = Fixture.stored(etagged)
        var clock = TestClock(now: t0)
        #expect(decide(s, at: clock) == .fresh(age: 0))
        clock.advance(99)
        #expect(decide(s, at: clock) == .fresh(age: 99))
        clock.advance(1)
        #expect(decide(s, at: clock) == validateV1, "stale exactly when age reaches the lifetime")
    }

    @Test func staleWithoutValidatorMustFetch() {
        let s = Fixture.stored(["Cache-Control": "max-age=10"])
        #expect(decide(s, at: TestClock(now: t0 + 10)) == .mustFetch)
    }

    @Test func ageFromTheAgeHeaderCounts() {
        let s = Fixture.stored(["Cache-Control": "max-age=10", "Age": "15", "ETag": "\"v1\""])
        #expect(decide(s, at: TestClock(now: t0)) == validateV1)
        let e = Fixture.stored(["Date": Fixture.date(t0 + 10), "Expires": Fixture.date(t0 + 20), "Age": "15"])
        #expect(decide(e, at: TestClock(now: t0)) == .mustFetch, "Date fast, Age beyond Expires − Date")
    }

    @Test func conditionalHeadersUseBothValidators() {
        let lm = Fixture.date(t0 - 1000)
        let s = Fixture.stored(["Cache-Control": "max-age=1", "ETag": "W/\"x\"", "Last-Modified": lm])
        #expect(decide(s, at: TestClock(now: t0 + 5)) == .validate(conditionalHeaders: ["If-None-Match": "W/\"x\"", "If-Modified-Since": lm]))
    }

    // MARK: Fetch cache modes

    @Test func modesNoStoreAndReloadNeverUseTheStore() {
        let s = Fixture.stored(etagged)
        for mode in [CacheMode.noStore, .reload] {
            #expect(decide(s, Fixture.request(mode: mode), at: TestClock(now: t0)) == .mustFetch, "\(mode)")
        }
    }

    @Test func modeNoCacheAlwaysValidates() {
        let s = Fixture.stored(etagged)
        #expect(decide(s, Fixture.request(mode: .noCache), at: TestClock(now: t0)) == validateV1)
        let noValidator = Fixture.stored(["Cache-Control": "max-age=100"])
        #expect(decide(noValidator, Fixture.request(mode: .noCache), at: TestClock(now: t0)) == .mustFetch)
    }

    @Test func forceCacheAndOnlyIfCachedIgnoreStalenessAndDirectives() {
        let s = Fixture.stored(["Cache-Control": "max-age=1, must-revalidate, no-cache"])
        for mode in [CacheMode.forceCache, .onlyIfCached] {
            #expect(decide(s, Fixture.request(mode: mode), at: TestClock(now: t0 + 500)) == .fresh(age: 500))
        }
        #expect(decide(s, Fixture.request(mode: .default), at: TestClock(now: t0 + 500)) == .mustFetch)
    }

    @Test func onlyIfCachedRequestDirectiveAsksForA504() {
        #expect(Fixture.request(["Cache-Control": "only-if-cached"]).requiresCachedResponse)
        #expect(Fixture.request(mode: .onlyIfCached).requiresCachedResponse)
        #expect(!Fixture.request().requiresCachedResponse)
    }

    // MARK: Response directives

    @Test func responseNoCacheAlwaysValidatesEvenWhenFresh() {
        let s = Fixture.stored(["Cache-Control": "max-age=10000, no-cache", "ETag": "\"v1\""])
        #expect(decide(s, at: TestClock(now: t0)) == validateV1)
        let qualified = Fixture.stored(["Cache-Control": "max-age=10000, no-cache=\"a\"", "ETag": "\"v1\""])
        #expect(decide(qualified, at: TestClock(now: t0)) == .fresh(age: 0), "qualified: the fields were stripped")
    }

    @Test func mustRevalidateBeatsMaxStale() {
        let request = Fixture.request(["Cache-Control": "max-stale=1000"])
        for cc in ["max-age=2, must-revalidate", "max-age=2, proxy-revalidate", "s-maxage=2"] {
            let s = Fixture.stored(["Cache-Control": cc, "ETag": "\"v1\""])
            #expect(decide(s, request, at: TestClock(now: t0 + 10)) == validateV1, "\(cc)")
        }
        let plain = Fixture.stored(["Cache-Control": "max-age=2", "ETag": "\"v1\""])
        #expect(decide(plain, request, at: TestClock(now: t0 + 10)) == .fresh(age: 10))
    }

    // MARK: Request directives

    @Test func requestNoCacheAndPragmaValidate() {
        let s = Fixture.stored(etagged)
        #expect(decide(s, Fixture.request(["Cache-Control": "no-cache"]), at: TestClock(now: t0)) == validateV1)
        #expect(decide(s, Fixture.request(["Pragma": "no-cache"]), at: TestClock(now: t0)) == validateV1)
        #expect(decide(s, Fixture.request(["Pragma": "no-cache", "Cache-Control": "max-stale"]), at: TestClock(now: t0)) == .fresh(age: 0))
    }

    @Test func requestMaxAge() {
        let s = Fixture.stored(etagged)
        let ma30 = Fixture.request(["Cache-Control": "max-age=30"])
        #expect(decide(s, ma30, at: TestClock(now: t0 + 30)) == .fresh(age: 30), "age ≤ max-age")
        #expect(decide(s, ma30, at: TestClock(now: t0 + 31)) == validateV1)
        #expect(decide(s, Fixture.request(["Cache-Control": "max-age=0"]), at: TestClock(now: t0)) == validateV1,
                "max-age=0 validates even at age 0")
        let aged = Fixture.stored(["Cache-Control": "max-age=3600", "Age": "1800", "ETag": "\"v1\""])
        #expect(decide(aged, Fixture.request(["Cache-Control": "max-age=600"]), at: TestClock(now: t0)) == validateV1)
    }

    @Test func requestMinFresh() {
        let s = Fixture.stored(etagged)  // lifetime 100
        let mf = Fixture.request(["Cache-Control": "min-fresh=40"])
        #expect(decide(s, mf, at: TestClock(now: t0 + 60)) == .fresh(age: 60), "40 s of freshness left")
        #expect(decide(s, mf, at: TestClock(now: t0 + 61)) == validateV1)
    }

    @Test func requestMaxStale() {
        let s = Fixture.stored(etagged)  // stale from t0 + 100
        let ms = Fixture.request(["Cache-Control": "max-stale=50"])
        #expect(decide(s, ms, at: TestClock(now: t0 + 150)) == .fresh(age: 150), "50 s stale: no more than 50")
        #expect(decide(s, ms, at: TestClock(now: t0 + 151)) == validateV1)
        let any = Fixture.request(["Cache-Control": "max-stale"])
        #expect(decide(s, any, at: TestClock(now: t0 + 1_000_000)) == .fresh(age: 1_000_000))
        #expect(decide(s, Fixture.request(["Cache-Control": "max-stale=x"]), at: TestClock(now: t0 + 101)) == validateV1)
    }

    @Test func requestNoStoreDoesNotPreventReuse() {
        #expect(decide(Fixture.stored(etagged), Fixture.request(["Cache-Control": "no-store"]), at: TestClock(now: t0)) == .fresh(age: 0))
    }

    // MARK: stale-while-revalidate

    @Test func staleWhileRevalidateWindow() {
        let s = Fixture.stored(["Cache-Control": "max-age=10, stale-while-revalidate=20", "ETag": "\"v1\""])
        var clock = TestClock(now: t0 + 9)
        #expect(decide(s, at: clock) == .fresh(age: 9))
        clock.advance(1)
        #expect(decide(s, at: clock) == .staleWhileRevalidate(age: 10), "first stale second")
        clock.now = t0 + 29
        #expect(decide(s, at: clock) == .staleWhileRevalidate(age: 29), "19 s stale")
        clock.now = t0 + 30
        #expect(decide(s, at: clock) == validateV1, "20 s stale: the window is over")
    }

    @Test func staleWhileRevalidateWithMaxAgeZero() {
        let s = Fixture.stored(["Cache-Control": "max-age=0, stale-while-revalidate=3600", "ETag": "\"abc\""])
        #expect(decide(s, at: TestClock(now: t0)) == .staleWhileRevalidate(age: 0))
        let noValidator = Fixture.stored(["Cache-Control": "max-age=0, stale-while-revalidate=60"])
        #expect(decide(noValidator, at: TestClock(now: t0 + 5)) == .staleWhileRevalidate(age: 5))
    }

    @Test func staleWhileRevalidateIsOverriddenByExplicitRevalidationDirectives() {
        for cc in ["max-age=1, stale-while-revalidate=60, must-revalidate", "max-age=1, stale-while-revalidate=60, no-cache",
                   "max-age=1, stale-while-revalidate=60, proxy-revalidate"] {
            let s = Fixture.stored(["Cache-Control": cc, "ETag": "\"v1\""])
            #expect(decide(s, at: TestClock(now: t0 + 5)) == validateV1, "\(cc)")
        }
        let cdn = Fixture.stored(["Cache-Control": "s-maxage=1, stale-while-revalidate=60", "ETag": "\"v1\""])
        #expect(decide(cdn, at: TestClock(now: t0 + 5)) == .staleWhileRevalidate(age: 5),
                "s-maxage's implied proxy-revalidate yields to the explicit permission")
    }

    @Test func requestMaxAgeStillAppliesDuringTheWindow() {
        let s = Fixture.stored(["Cache-Control": "max-age=10, stale-while-revalidate=60", "ETag": "\"v1\""])
        #expect(decide(s, Fixture.request(["Cache-Control": "max-age=5"]), at: TestClock(now: t0 + 20)) == validateV1)
    }

    // MARK: Methods and variants

    @Test func headIsAnsweredFromTheStoredGETButOtherMethodsAreNot() {
        let s = Fixture.stored(etagged)
        #expect(decide(s, Fixture.request(method: "HEAD"), at: TestClock(now: t0)) == .fresh(age: 0))
        #expect(decide(s, Fixture.request(method: "POST"), at: TestClock(now: t0)) == .mustFetch)
    }

    @Test func varyMismatchMustFetch() {
        let original = Fixture.request(["Foo": "1"])
        let s = Fixture.stored(["Cache-Control": "max-age=100", "Vary": "Foo", "ETag": "\"v1\""], request: original)
        #expect(decide(s, Fixture.request(["foo": "1"]), at: TestClock(now: t0)) == .fresh(age: 0))
        #expect(decide(s, Fixture.request(["Foo": "2"]), at: TestClock(now: t0)) == .mustFetch)
        #expect(decide(s, Fixture.request(), at: TestClock(now: t0)) == .mustFetch, "omitted")
        #expect(decide(s, Fixture.request(["Foo": "2"], mode: .forceCache), at: TestClock(now: t0)) == .mustFetch,
                "force-cache still needs a matching variant")
    }
}
