import Testing
@testable import FerryHTTPCache

@Suite struct RevalidationTests {
    let t0 = Fixture.t0

    @Test func conditionalHeaders() {
        let lm = Fixture.date(t0 - 86_400)
        #expect(FerryHTTPCache.conditionalHeaders(for: Fixture.stored(["ETag": "\"abc\""])) == ["If-None-Match": "\"abc\""])
        #expect(FerryHTTPCache.conditionalHeaders(for: Fixture.stored(["ETag": "abc"])) == ["If-None-Match": "\"abc\""], "quoted")
        #expect(FerryHTTPCache.conditionalHeaders(for: Fixture.stored(["Last-Modified": " \(lm) "])) == ["If-Modified-Since": lm])
        #expect(FerryHTTPCache.conditionalHeaders(for: Fixture.stored(["Last-Modified": "garbage"])).isEmpty)
        #expect(FerryHTTPCache.conditionalHeaders(for: Fixture.stored(["Date": Fixture.date(t0)])).isEmpty, "Date is not a validator")
    }

    @Test func notModifiedReplacesFieldsButNotContentLengthOrHopByHop() {
        let stored: HTTPFields = ["Cache-Control": "max-age=1", "Content-Length": "5", "Test-Header": "A", "Keep": "k",
                                  "Set-Cookie": "a=1", "Set-Cookie": "b=1"]
        let notModified: HTTPFields = ["Cache-Control": "max-age=3600", "Content-Length": "0", "Test-Header": "B",
                                       "Connection": "X-Hop", "X-Hop": "h", "Keep-Alive": "timeout=5",
                                       "Set-Cookie": "a=2", "New": "n", "Content-Range": "bytes 0-0/1"]
        let merged = updatedHeaders(stored: stored, notModified: notModified)
        #expect(merged.pairs.map(\.name) == ["Cache-Control", "Content-Length", "Test-Header", "Keep", "Set-Cookie", "New"])
        #expect(merged.first("cache-control") == "max-age=3600")
        #expect(merged.first("content-length") == "5")
        #expect(merged.first("test-header") == "B")
        #expect(merged.values("set-cookie") == ["a=2"], "all stored lines of a name are replaced")
        #expect(!merged.contains("x-hop") && !merged.contains("keep-alive") && !merged.contains("connection"))
        #expect(!merged.contains("content-range"))
    }

    @Test func callerCanProtectMoreFields() {
        let merged = updatedHeaders(stored: ["Content-Encoding": "gzip"], notModified: ["Content-Encoding": "br"],
                                    keepingStored: ["content-encoding"])
        #expect(merged.first("content-encoding") == "gzip")
        #expect(updatedHeaders(stored: ["Content-Encoding": "gzip"], notModified: ["Content-Encoding": "br"]).first("content-encoding") == "br")
    }

    @Test func qualifiedNoCacheInTheNewCacheControlStripsOldFields() {
        let merged = updatedHeaders(stored: ["X-A": "1", "Cache-Control": "max-age=1"], notModified: ["Cache-Control": "no-cache=\"x-a\", max-age=9"])
        #expect(!merged.contains("x-a"))
    }

    @Test func updatingFreshensAStaleEntry() {
        let stale = Fixture.stored(["Cache-Control": "max-age=1", "ETag": "\"e\"", "Age": "100", "Test-Header": "A"])
        var clock = TestClock(now: t0 + 500)
        #expect(evaluate(request: Fixture.request(), stored: stale, now: clock.now) == .validate(conditionalHeaders: ["If-None-Match": "\"e\""]))
        let fresh = stale.updating(withNotModified: ["Cache-Control": "max-age=3600", "ETag": "\"e\"", "Test-Header": "B"],
                                   requestTime: clock.now - 1, responseTime: clock.now)
        #expect(fresh.requestTime == clock.now - 1 && fresh.responseTime == clock.now)
        #expect(fresh.headers.first("date") == Fixture.date(clock.now), "the 304 had no Date: one is added")
        #expect(!fresh.headers.contains("age"), "the old Age described the old message")
        #expect(fresh.headers.first("test-header") == "B")
        clock.advance(10)
        #expect(evaluate(request: Fixture.request(), stored: fresh, now: clock.now) == .fresh(age: 11))
    }

    @Test func updatingKeepsTheDateAndAgeOfThe304() {
        let stale = Fixture.stored(["Cache-Control": "max-age=1", "ETag": "\"e\""])
        let fresh = stale.updating(withNotModified: ["Date": Fixture.date(t0 + 90), "Age": "7"], requestTime: t0 + 99, responseTime: t0 + 100)
        #expect(fresh.headers.values("date") == [Fixture.date(t0 + 90)])
        #expect(fresh.headers.first("age") == "7")
        #expect(currentAge(stored: fresh, now: t0 + 100) == 10, "apparent age 10 > corrected 7 + 1")
    }

    @Test func selectionByStrongETag() {
        let a = Fixture.stored(["ETag": "\"a\""])
        let b = Fixture.stored(["ETag": "\"b\""])
        let b2 = Fixture.stored(["ETag": "\"b\""], at: t0 + 5)
        #expect(selectForUpdate(stored: [a, b, b2], notModified: ["ETag": "\"b\""]) == [1, 2])
        #expect(selectForUpdate(stored: [a, b], notModified: ["ETag": "\"c\""]).isEmpty)
        #expect(selectForUpdate(stored: [Fixture.stored(["ETag": "W/\"b\""])], notModified: ["ETag": "\"b\""]).isEmpty,
                "a strong validator does not match a weak one")
    }

    @Test func selectionByWeakValidatorPicksTheMostRecent() {
        let older = Fixture.stored(["ETag": "W/\"w\""], at: t0)
        let newer = Fixture.stored(["ETag": "\"w\""], at: t0 + 10)
        let other = Fixture.stored(["ETag": "\"x\""], at: t0 + 20)
        #expect(selectForUpdate(stored: [older, newer, other], notModified: ["ETag": "W/\"w\""]) == [1])
        let lm = Fixture.date(t0 - 1000)
        let l1 = Fixture.stored(["Last-Modified": lm], at: t0)
        let l2 = Fixture.stored(["Last-Modified": Fixture.date(t0 - 5)], at: t0 + 1)
        #expect(selectForUpdate(stored: [l1, l2], notModified: ["Last-Modified": lm]) == [0])
    }

    @Test func selectionWithoutValidators() {
        let only = Fixture.stored(["ETag": "\"a\""])
        #expect(selectForUpdate(stored: [only], notModified: ["Cache-Control": "max-age=5"]) == [0])
        #expect(selectForUpdate(stored: [only, only], notModified: [:]).isEmpty)
        #expect(selectForUpdate(stored: [], notModified: [:]).isEmpty)
    }

    @Test func headResponses() {
        let s = Fixture.stored(["ETag": "\"v\"", "Content-Length": "10", "Template-A": "1"])
        guard case .update(let h) = headUpdate(stored: s, headStatus: 200, headHeaders: ["ETag": "\"v\"", "Template-A": "2", "Content-Length": "10"]) else {
            Issue.record("expected an update")
            return
        }
        #expect(h.first("template-a") == "2")
        #expect(headUpdate(stored: s, headStatus: 200, headHeaders: ["Cache-Control": "max-age=1000"]) != .invalidate, "no validators to contradict")
        #expect(headUpdate(stored: s, headStatus: 200, headHeaders: ["ETag": "\"w\""]) == .invalidate)
        #expect(headUpdate(stored: s, headStatus: 200, headHeaders: ["ETag": "\"v\"", "Content-Length": "11"]) == .invalidate)
        #expect(headUpdate(stored: s, headStatus: 200, headHeaders: ["Last-Modified": Fixture.date(t0)]) == .invalidate)
        #expect(headUpdate(stored: s, headStatus: 410, headHeaders: ["Template-A": "2"]) == .none)
        let sized = StoredResponse(status: 200, headers: [:], requestTime: 0, responseTime: 0, bodySize: 3)
        #expect(headUpdate(stored: sized, headStatus: 200, headHeaders: ["Content-Length": "3"]) != .invalidate)
    }

    @Test func entityTags() {
        #expect(EntityTag("W/\"a\"") == EntityTag(weak: true, opaque: "a"))
        #expect(EntityTag("w/\"a\"")?.isWeak == true)
        #expect(EntityTag("\"\"") == EntityTag(weak: false, opaque: ""))
        #expect(EntityTag("") == nil)
        #expect(EntityTag("\"a\"")!.weakMatches(EntityTag("W/\"a\"")!))
        #expect(!EntityTag("\"a\"")!.strongMatches(EntityTag("W/\"a\"")!))
        #expect(EntityTag.list("\"a\", W/\"b\", c")?.map(\.opaque) == ["a", "b", "c"])
        #expect(EntityTag.list("\"a\", *") == nil)
    }
}
