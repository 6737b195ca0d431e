import Testing
@testable import FerryHTTPCache

@Suite struct StorabilityTests {
    let key = HTTPCacheKey(method: "GET", url: Fixture.url)

    func verdict(_ response: HTTPFields, status: Int = 200, request: CacheRequest = Fixture.request()) -> StorageVerdict {
        storageVerdict(request: request, status: status, responseHeaders: response)
    }

    func reason(_ v: StorageVerdict) -> String? {
        if case .doNotStore(let r) = v { return r }
        return nil
    }

    @Test func freshResponseToGETIsStoredUnderItsNormalisedURL() {
        let req = CacheRequest(url: "HTTP://Example.test:80/r#frag")
        #expect(verdict(["Cache-Control": "max-age=60"], request: req) == .store(key: key))
    }

    @Test func noStoreInRequestOrResponse() {
        #expect(reason(verdict(["Cache-Control": "max-age=60, no-store"])) == "response Cache-Control: no-store")
        #expect(reason(verdict(["Cache-Control": "No-StOrE"])) != nil)
        #expect(reason(verdict(["Cache-Control": "max-age=60"], request: Fixture.request(["Cache-Control": "no-store"])))
            == "request Cache-Control: no-store")
        #expect(reason(verdict(["Cache-Control": "max-age=60"], request: Fixture.request(mode: .noStore))) != nil)
        #expect(verdict(["Cache-Control": "max-age=60"], request: Fixture.request(mode: .reload)).isStorable)
    }

    @Test func mustUnderstandOverridesNoStoreForUnderstoodStatuses() {
        #expect(verdict(["Cache-Control": "no-store, must-understand, max-age=60"]).isStorable)
        #expect(!verdict(["Cache-Control": "no-store, must-understand, max-age=60"], status: 299).isStorable)
        #expect(!verdict(["Cache-Control": "must-understand, max-age=60"], status: 299).isStorable)
    }

    @Test func privateIsNotStoredButQualifiedPrivateIs() {
        #expect(reason(verdict(["Cache-Control": "private, max-age=3600"])) == "response Cache-Control: private")
        #expect(!verdict(["Cache-Control": "public, private, max-age=3600"]).isStorable)
        #expect(verdict(["Cache-Control": "private=\"Set-Cookie\", max-age=3600"]).isStorable)
    }

    @Test func authorizationNeedsAnExplicitPermission() {
        let auth = Fixture.request(["Authorization": "Basic Zm9v"])
        #expect(!verdict(["Expires": Fixture.date(Fixture.t0 + 86_400), "Date": Fixture.date(Fixture.t0)], request: auth).isStorable)
        #expect(!verdict(["Cache-Control": "max-age=3600, proxy-revalidate"], request: auth).isStorable)
        #expect(verdict(["Cache-Control": "max-age=3600, public"], request: auth).isStorable)
        #expect(verdict(["Cache-Control": "s-maxage=3600"], request: auth).isStorable)
        #expect(verdict(["Cache-Control": "max-age=3600, must-revalidate"], request: auth).isStorable)
    }

    @Test func statusCodes() {
        let fresh: HTTPFields = ["Cache-Control": "max-age=60"]
        for status in [200, 203, 204, 299, 301, 302, 303, 307, 308, 400, 404, 410, 499, 500, 502, 503, 504, 599] {
            #expect(verdict(fresh, status: status).isStorable, "\(status) with explicit freshness")
        }
        for status in [100, 103, 206, 304, 600, 999] {
            #expect(!verdict(fresh, status: status).isStorable, "\(status)")
        }
    }

    @Test func withoutExplicitFreshnessOnlyHeuristicStatusesOrPublic() {
        #expect(verdict([:], status: 200).isStorable, "heuristically cacheable, even without Last-Modified")
        #expect(verdict([:], status: 404).isStorable)
        #expect(!verdict([:], status: 201).isStorable)
        #expect(!verdict([:], status: 302).isStorable)
        #expect(verdict(["Cache-Control": "public"], status: 302).isStorable)
        #expect(verdict(["Expires": "0"], status: 302).isStorable, "an Expires field is explicit, even if invalid")
    }

    @Test func noCacheWithAValidatorIsStoredForRevalidation() {
        #expect(verdict(["Cache-Control": "no-cache", "ETag": "\"a\""], status: 302).isStorable)
        #expect(!verdict(["Cache-Control": "no-cache"], status: 302).isStorable)
    }

    @Test func methods() {
        let fresh: HTTPFields = ["Cache-Control": "max-age=60"]
        #expect(!verdict(fresh, request: Fixture.request(method: "HEAD")).isStorable)
        #expect(!verdict(fresh, request: Fixture.request(method: "PUT")).isStorable)
        #expect(!verdict(fresh, request: Fixture.request(method: "get")).isStorable)
        #expect(!verdict(fresh, request: Fixture.request(method: "POST")).isStorable, "no Content-Location")
    }

    @Test func postWithMatchingContentLocationAndFreshnessIsStoredUnderGET() {
        let post = Fixture.request(method: "POST")
        #expect(verdict(["Cache-Control": "max-age=60", "Content-Location": "/r"], request: post) == .store(key: key))
        #expect(verdict(["Expires": Fixture.date(Fixture.t0 + 60), "Content-Location": Fixture.url], request: post).isStorable)
        #expect(!verdict(["Cache-Control": "max-age=60", "Content-Location": "/other"], request: post).isStorable)
        #expect(!verdict(["Content-Location": "/r"], request: post).isStorable, "no explicit freshness")
    }

    @Test func varyStarIsNotStored() {
        #expect(!verdict(["Cache-Control": "max-age=60", "Vary": "Accept, *"]).isStorable)
        #expect(!verdict(["Cache-Control": "max-age=60", "Vary": "", "vary": "*"]).isStorable)
        #expect(verdict(["Cache-Control": "max-age=60", "Vary": "Accept"]).isStorable)
    }

    @Test func nonHTTPURLs() {
        #expect(!verdict(["Cache-Control": "max-age=60"], request: CacheRequest(url: "ftp://a.test/x")).isStorable)
        #expect(!verdict(["Cache-Control": "max-age=60"], request: CacheRequest(url: "http://u:p@a.test/")).isStorable)
    }
}

@Suite struct StoredHeadersTests {
    @Test func hopByHopAndConnectionListedFieldsAreDropped() {
        let h: HTTPFields = [
            "Connection": "a, B", "a": "1", "b": "2", "c": "3", "Keep-Alive": "timeout=5", "Transfer-Encoding": "chunked",
            "Upgrade": "h2c", "TE": "trailers", "Proxy-Connection": "keep-alive", "Proxy-Authenticate": "Basic",
            "Set-Cookie": "s=1", "WWW-Authenticate": "Basic",
        ]
        #expect(headersToStore(response: h).pairs.map(\.name) == ["c", "Set-Cookie", "WWW-Authenticate"])
    }

    @Test func qualifiedNoCacheAndPrivateFieldsAreDropped() {
        let h: HTTPFields = ["Cache-Control": "no-cache=\"a\"", "a": "1", "b": "2", "Cache-Control": "max-age=3600",
                             "cache-control": "private=\"Set-Cookie, x-b\"", "Set-Cookie": "s", "X-B": "x"]
        #expect(headersToStore(response: h).pairs.map(\.name) == ["Cache-Control", "b", "Cache-Control", "cache-control"])
    }

    @Test func dateIsAddedOnlyWhenMissing() {
        #expect(headersToStore(response: ["A": "1"], receivedAt: 0).first("date") == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(headersToStore(response: ["Date": "x"], receivedAt: 0).values("date") == ["x"])
        #expect(!headersToStore(response: ["A": "1"]).contains("date"))
    }

    @Test func storedResponseFromAReceivedOne() {
        let req = Fixture.request(["Accept": "text/html"])
        let s = StoredResponse(storing: 200, headers: ["Vary": "accept", "Connection": "close", "Age": "3"], for: req,
                               requestTime: 5, responseTime: 7, bodySize: 12)
        #expect(s.varyKey == "accept=text/html")
        #expect(s.headers.pairs.map(\.name) == ["Vary", "Age", "Date"])
        #expect(s.requestTime == 5 && s.responseTime == 7 && s.bodySize == 12)
        #expect(Fixture.stored(["Cache-Control": "max-age=1"]).varyKey == nil)
    }
}
