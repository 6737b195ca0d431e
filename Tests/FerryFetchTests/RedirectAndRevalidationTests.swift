import Testing
@testable import FerryFetch
import FerryHTTPCache
import FerryProtocol

/// Redirects are followed hop by hop through the cache; stale responses are validated, once for everyone.
@Suite struct RedirectAndRevalidationTests {
    @Test func everyHopIsCachedUnderItsOwnURL() {
        let h = EngineHarness()
        let first = h.fetch("http://o.test/old")
        h.origin.exchanges[0].respond(301, [("Location", "/new"), ("Cache-Control", "max-age=600")])
        #expect(h.origin.exchanges.count == 2 && h.origin.exchanges[1].request.url == "http://o.test/new")
        h.origin.exchanges[1].respond(200, [("Cache-Control", "max-age=600")], body: "moved")
        #expect(first.text == "moved" && first.outcome?.redirects == 1 && first.outcome?.url == "http://o.test/new")
        let again = h.fetch("http://o.test/old")
        #expect(again.text == "moved" && again.outcome?.cache == .hit && h.origin.exchanges.count == 2, "both hops from the cache")
    }

    @Test func redirectModesAndLimits() {
        let h = EngineHarness()
        let manual = h.fetch("http://o.test/a") { $0.redirect = .manual }
        h.origin.exchanges[0].respond(302, [("Location", "http://o.test/b")])
        #expect(manual.outcome?.status == 302 && h.origin.exchanges.count == 1)
        let error = h.fetch("http://o.test/c") { $0.redirect = .error }
        h.origin.exchanges[1].respond(302, [("Location", "http://o.test/b")])
        guard case .redirect? = error.failure else { Issue.record("redirect: error fails"); return }
        let limited = h.fetch("http://o.test/d") { $0.maxRedirects = 0 }
        h.origin.exchanges[2].respond(302, [("Location", "http://o.test/b")])
        guard case .redirect(let m)? = limited.failure else { Issue.record("max_redirects 0 fails"); return }
        #expect(m.contains("max_redirects"))
        let elsewhere = h.fetch("http://o.test/e")
        h.origin.exchanges[3].respond(302, [("Location", "ftp://o.test/file")])
        guard case .redirect? = elsewhere.failure else { Issue.record("a redirect to ftp fails"); return }
    }

    @Test func aSeeOtherBecomesAGetAndCredentialsStayWithTheirOrigin() {
        let h = EngineHarness()
        h.fetch("http://o.test/form") {
            $0.method = "POST"
            $0.body = Array("q=1".utf8)
            $0.headers = [("Authorization", "Bearer t"), ("Content-Type", "application/x-www-form-urlencoded")]
        }
        h.origin.exchanges[0].respond(303, [("Location", "http://other.test/done")])
        let next = h.origin.exchanges[1]
        #expect(next.request.method == "GET" && next.request.body.isEmpty)
        #expect(next.header("authorization") == nil && next.header("content-type") == nil)
    }

    @Test func staleResponsesAreValidatedOnceForEveryoneWaiting() {
        let h = EngineHarness()
        h.fetch("http://o.test/v")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=10"), ("ETag", "\"v1\"")], body: "versioned")
        h.clock.advance(seconds: 60)
        let a = h.fetch("http://o.test/v")
        let b = h.fetch("http://o.test/v")
        #expect(h.origin.exchanges.count == 2, "one conditional request for both")
        #expect(h.origin.exchanges[1].header("if-none-match") == "\"v1\"")
        h.origin.exchanges[1].respond(304, [("Cache-Control", "max-age=10"), ("ETag", "\"v1\"")])
        #expect(a.outcome?.cache == .revalidated && a.text == "versioned")
        #expect(b.outcome?.cache == .revalidated && b.text == "versioned")
        let fresh = h.fetch("http://o.test/v")
        #expect(fresh.outcome?.cache == .hit, "the 304 refreshed the stored response")
    }

    @Test func staleWhileRevalidateServesAtOnceAndRefreshesInTheBackground() {
        let h = EngineHarness()
        h.fetch("http://o.test/swr")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=1, stale-while-revalidate=600"), ("ETag", "\"a\"")], body: "old")
        h.clock.advance(seconds: 5)
        let stale = h.fetch("http://o.test/swr")
        let again = h.fetch("http://o.test/swr")
        #expect(stale.outcome?.cache == .stale && stale.text == "old" && again.outcome?.cache == .stale)
        #expect(h.origin.exchanges.count == 2, "exactly one background revalidation")
        h.origin.exchanges[1].respond(200, [("Cache-Control", "max-age=600"), ("ETag", "\"b\"")], body: "new")
        #expect(h.fetch("http://o.test/swr").text == "new")
    }

    @Test func anErrorFromTheOriginServesStaleWhereAllowed() {
        let h = EngineHarness()
        h.fetch("http://o.test/sie")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=1, stale-if-error=600")], body: "kept")
        h.clock.advance(seconds: 5)
        let r = h.fetch("http://o.test/sie")
        h.origin.exchanges[1].respond(503)
        #expect(r.outcome?.cache == .stale && r.text == "kept" && r.outcome?.status == 200)
    }

    @Test func onlyIfCachedNeverReachesTheOrigin() {
        let h = EngineHarness()
        let r = h.fetch("http://o.test/nothing") { $0.cacheMode = .onlyIfCached }
        #expect(r.outcome?.status == 504 && r.outcome?.cache == .miss && h.origin.exchanges.isEmpty)
    }

    @Test func anUnsafeMethodInvalidatesTheStoredGet() {
        let h = EngineHarness()
        h.fetch("http://o.test/item")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=600")], body: "v1")
        h.fetch("http://o.test/item") { $0.method = "PUT"; $0.body = [1] }
        h.origin.exchanges[1].respond(204)
        let after = h.fetch("http://o.test/item")
        #expect(after.result == nil && h.origin.exchanges.count == 3, "the PUT invalidated the stored GET")
    }

    @Test func theOutcomeSaysHowLongItStaysFresh() {
        let h = EngineHarness()
        let r = h.fetch("http://o.test/f")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=100"), ("Age", "40")], body: "x")
        #expect(r.outcome?.freshForSeconds == 60)
        let noStore = h.fetch("http://o.test/g")
        h.origin.exchanges[1].respond(200, [("Cache-Control", "no-store")])
        #expect((noStore.outcome?.freshForSeconds ?? 1) <= 0)
    }
}
