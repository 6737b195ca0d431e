import Testing
@testable import FerryHTTPCache

@Suite struct CacheControlTests {
    @Test func quotedValuesKeepTheirCommas() {
        let cc = CacheControl("private=\"Set-Cookie, X-Token\", max-age=60")
        #expect(cc.privateFields == ["set-cookie", "x-token"])
        #expect(!cc.isPrivate, "qualified private is not unqualified private")
        #expect(cc.maxAge == 60)
        #expect(cc.directives.count == 2)
    }

    @Test func directiveNamesInsideQuotedStringsAreIgnored() {
        #expect(CacheControl("extension=\"max-age=3600\", max-age=1").maxAge == 1)
        #expect(CacheControl("max-age=1, extension=\"max-age=3600\"").maxAge == 1)
        #expect(CacheControl("extension=\"max-age=100\", max-age=\"1\"").maxAge == 1)
        let escaped = CacheControl("ext=\"a\\\"b, max-age=9\", max-age=5")
        #expect(escaped.maxAge == 5)
        #expect(escaped.argument("ext") == "a\"b, max-age=9")
    }

    @Test func quotedNumbersAreAccepted() {
        #expect(CacheControl("max-age=\"3600\"").maxAge == 3600)
        #expect(CacheControl("s-maxage=\"10\"").sMaxAge == 10)
    }

    @Test(arguments: [
        "max-age='3600'", "max-age=3600.0", "max-age=3600.5", "max-age=-100", "max-age=a100", "max-age=100a",
        "max-age =100", "max-age= 100", "max-age", "max-age=", "max-age=\"\"", "max-age=\"12",
    ])
    func invalidMaxAgeCountsAsZero(_ value: String) {
        #expect(CacheControl(value).maxAge == 0)
    }

    @Test func malformedMembersAreMarked() {
        let cc = CacheControl("max-age =5, public")
        #expect(cc.directives.first?.name == "max-age")
        #expect(cc.directives.first?.isWellFormed == false)
        #expect(cc.isPublic, "the next member still parses")
        #expect(CacheControl("junk x=\"a, max-age=99\", max-age=5").maxAge == 5, "skipping garbage respects quotes")
        #expect(CacheControl("\"max-age=99\", max-age=5").maxAge == 5, "a member that is not a token")
    }

    @Test func leadingZerosAndOverflow() {
        #expect(CacheControl("max-age=003600").maxAge == 3600)
        #expect(CacheControl("max-age=2147483648").maxAge == 2_147_483_648)
        #expect(CacheControl("max-age=99999999999").maxAge == 2_147_483_648)
        #expect(CacheControl("max-age=99999999999999999999999999").maxAge == 2_147_483_648)
    }

    @Test func firstOccurrenceOfADuplicateWins() {
        #expect(CacheControl("max-age=60, max-age=0").maxAge == 60)
        #expect(CacheControl("max-age=0, max-age=60").maxAge == 0)
        #expect(CacheControl(fieldValues: ["max-age=1800", "max-age=1"]).maxAge == 1800)
        #expect(CacheControl(fieldValues: ["max-age=abc", "max-age=60"]).maxAge == 0, "first is invalid: stale")
    }

    @Test func everyFieldLineIsParsedOnItsOwn() {
        let h: HTTPFields = ["Cache-Control": "ext=\"unterminated", "X": "y", "cache-control": "max-age=5, no-store"]
        let cc = CacheControl(responseHeaders: h)
        #expect(cc.maxAge == 5)
        #expect(cc.noStore)
    }

    @Test func namesAreCaseInsensitive() {
        let cc = CacheControl("MaX-AgE=5, No-StOrE, PUBLIC, Must-Revalidate, S-MaxAge=7")
        #expect(cc.maxAge == 5 && cc.sMaxAge == 7)
        #expect(cc.noStore && cc.isPublic && cc.mustRevalidate)
        #expect(cc.contains("NO-STORE"))
    }

    @Test func emptyMembersAndWhitespaceAreSkipped() {
        let cc = CacheControl(" ,, public ,\t, max-age=5 ,")
        #expect(cc.directives.map(\.name) == ["public", "max-age"])
        #expect(cc.maxAge == 5)
    }

    @Test func unknownDirectivesAreKept() {
        let cc = CacheControl("foo, community=\"UCI\", max-age=5")
        #expect(cc.contains("foo"))
        #expect(cc.argument("community") == "UCI")
        #expect(cc.maxAge == 5)
        #expect(!cc.noStore && !cc.noCache && !cc.isPrivate)
    }

    @Test func noCacheQualifiedAndUnqualified() {
        #expect(CacheControl("no-cache").noCache)
        #expect(CacheControl("no-cache").noCacheFields.isEmpty)
        let q = CacheControl("no-cache=\"Set-Cookie, X-A\"")
        #expect(!q.noCache)
        #expect(q.noCacheFields == ["set-cookie", "x-a"])
        #expect(CacheControl("no-cache=X-A").noCacheFields == ["x-a"], "token form accepted")
        #expect(CacheControl("no-cache=\"\"").noCache, "an empty list is treated as unqualified")
        let both = CacheControl("no-cache=\"a\", no-cache")
        #expect(both.noCache && both.noCacheFields == ["a"])
    }

    @Test func privateQualifiedAndUnqualified() {
        #expect(CacheControl("private").isPrivate)
        #expect(!CacheControl("private=\"x\"").isPrivate)
        #expect(CacheControl("private=\"x\", private").isPrivate)
    }

    @Test func requestDirectives() {
        #expect(CacheControl("max-stale").maxStale == CacheControl.unlimited)
        #expect(CacheControl("max-stale=30").maxStale == 30)
        #expect(CacheControl("max-stale=abc").maxStale == nil, "an invalid permission grants nothing")
        #expect(CacheControl("min-fresh=20").minFresh == 20)
        #expect(CacheControl("min-fresh=x").minFresh == nil)
        #expect(CacheControl("only-if-cached").onlyIfCached)
        #expect(CacheControl("max-age=0").maxAge == 0)
    }

    @Test func staleExtensions() {
        let cc = CacheControl("max-age=1, stale-while-revalidate=30, stale-if-error=\"600\"")
        #expect(cc.staleWhileRevalidate == 30 && cc.staleIfError == 600)
        #expect(CacheControl("stale-while-revalidate=soon").staleWhileRevalidate == nil)
        #expect(CacheControl("stale-if-error").staleIfError == nil)
    }

    @Test func otherResponseDirectives() {
        let cc = CacheControl("proxy-revalidate, must-understand, no-transform, immutable")
        #expect(cc.proxyRevalidate && cc.mustUnderstand && cc.noTransform && cc.immutable)
        #expect(!cc.mustRevalidate)
    }

    @Test func pragmaCountsOnlyForRequestsWithoutCacheControl() {
        #expect(CacheControl(requestHeaders: ["Pragma": "no-cache"]).noCache)
        #expect(CacheControl(requestHeaders: ["Pragma": "foo, No-Cache"]).noCache)
        #expect(!CacheControl(requestHeaders: ["Pragma": "no-cache", "Cache-Control": "max-stale"]).noCache)
        #expect(!CacheControl(requestHeaders: ["Pragma": "unrecognised-extension"]).noCache)
        #expect(!CacheControl(responseHeaders: ["Pragma": "no-cache"]).noCache, "ignored in responses")
    }
}
