import Testing
@testable import FerryHTTPCache

@Suite struct ServingTests {
    let t0 = Fixture.t0

    @Test func ageHeaderValues() {
        #expect(ageHeaderValue(42) == "42")
        #expect(ageHeaderValue(0) == "0")
        #expect(ageHeaderValue(-3) == "0")
        #expect(ageHeaderValue(2_147_483_647) == "2147483647")
        #expect(ageHeaderValue(1 << 40) == "2147483648")
    }

    @Test func servedHeadersReplaceAgeAndKeepDate() {
        let s = Fixture.stored(["Date": Fixture.date(t0), "Age": "30", "X": "1", "age": "31"])
        let h = headersForServing(stored: s, age: 45)
        #expect(h.values("age") == ["45"])
        #expect(h.first("date") == Fixture.date(t0))
        #expect(h.pairs.map(\.name) == ["Date", "X", "Age"])
    }

    @Test func ifNoneMatch() {
        let s = Fixture.stored(["ETag": "\"abcdef\"", "Cache-Control": "max-age=100"])
        func matches(_ inm: String) -> Bool { clientConditionMatches(request: Fixture.request(["If-None-Match": inm]), stored: s) }
        #expect(matches("\"abcdef\""))
        #expect(matches("\"1234\", \"abcdef\", \"5678\""))
        #expect(matches("W/\"abcdef\""), "weak comparison")
        #expect(matches("abcdef"), "unquoted")
        #expect(matches("*"))
        #expect(!matches("\"abc\""))
        let weak = Fixture.stored(["ETag": "w/\"abcdef\""])
        #expect(clientConditionMatches(request: Fixture.request(["If-None-Match": "w/\"abcdef\""]), stored: weak))
    }

    @Test func ifNoneMatchTakesPrecedenceOverIfModifiedSince() {
        let s = Fixture.stored(["ETag": "\"abcdef\"", "Last-Modified": Fixture.date(t0 - 5000)])
        let both = Fixture.request(["If-None-Match": "\"other\"", "If-Modified-Since": Fixture.date(t0)])
        #expect(!clientConditionMatches(request: both, stored: s))
        let both2 = Fixture.request(["If-None-Match": "\"abcdef\"", "If-Modified-Since": Fixture.date(t0 - 9999)])
        #expect(clientConditionMatches(request: both2, stored: s))
    }

    @Test func ifModifiedSince() {
        let s = Fixture.stored(["Last-Modified": Fixture.date(t0 - 3000)])
        func matches(_ ims: String, method: String = "GET") -> Bool {
            clientConditionMatches(request: Fixture.request(["If-Modified-Since": ims], method: method), stored: s)
        }
        #expect(matches(Fixture.date(t0 - 3000)), "same date")
        #expect(matches(Fixture.date(t0 - 2000)), "later date")
        #expect(!matches(Fixture.date(t0 - 3001)), "earlier date: modified since")
        #expect(matches("Sunday, 14-Nov-23 21:23:20 GMT"), "an equivalent RFC 850 date")
        #expect(!matches("not a date"))
        #expect(!matches(Fixture.date(t0), method: "POST"))
        #expect(matches(Fixture.date(t0), method: "HEAD"))
    }

    @Test func ifModifiedSinceWithoutLastModifiedUsesDate() {
        let s = Fixture.stored(["Date": Fixture.date(t0), "Cache-Control": "max-age=10000"])
        #expect(clientConditionMatches(request: Fixture.request(["If-Modified-Since": Fixture.date(t0)]), stored: s))
        #expect(!clientConditionMatches(request: Fixture.request(["If-Modified-Since": Fixture.date(t0 - 3000)]), stored: s))
    }

    @Test func preconditionsOnlyApplyToStoredSuccesses() {
        let s = Fixture.stored(["ETag": "\"a\""], status: 404)
        #expect(!clientConditionMatches(request: Fixture.request(["If-None-Match": "\"a\""]), stored: s))
    }

    @Test func notModifiedResponseHeaders() {
        let s = Fixture.stored(["Date": Fixture.date(t0), "ETag": "\"e\"", "Cache-Control": "max-age=60", "Content-Type": "text/plain",
                                "Last-Modified": Fixture.date(t0 - 10), "Vary": "Accept", "Content-Length": "9"])
        let h = notModifiedHeaders(stored: s, age: 5)
        #expect(h.pairs.map(\.name) == ["Date", "ETag", "Cache-Control", "Vary", "Age"])
        #expect(h.first("etag") == "\"e\"" && h.first("age") == "5")
        let noETag = Fixture.stored(["Last-Modified": Fixture.date(t0 - 10)])
        #expect(notModifiedHeaders(stored: noETag, age: 0).contains("last-modified"))
    }
}
