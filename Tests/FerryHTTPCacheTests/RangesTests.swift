import Testing
@testable import FerryHTTPCache

/// What a `Range` asks of a complete stored response (RFC 9110 §14).
@Suite struct RangesTests {
    let stored = Fixture.stored(["ETag": "\"v1\"", "Last-Modified": "Tue, 01 Dec 2026 10:00:00 GMT"])

    func answer(_ headers: HTTPFields, size: Int = 1000) -> RangeAnswer { rangeAnswer(request: headers, stored: stored, size: size) }

    @Test func singleRangesOfEveryForm() {
        #expect(answer(["Range": "bytes=0-99"]) == .part(0..<100))
        #expect(answer(["Range": "bytes=900-"]) == .part(900..<1000))
        #expect(answer(["Range": "bytes=-10"]) == .part(990..<1000))
        #expect(answer(["Range": "bytes=-5000"]) == .part(0..<1000), "a suffix longer than the body is all of it")
        #expect(answer(["Range": "bytes=990-5000"]) == .part(990..<1000), "the last position is clamped")
        #expect(answer(["Range": " bytes=10-19 "]) == .part(10..<20), "spaces around the field value")
        #expect(answer(["Range": "bytes = 10-19"]) == .whole, "not inside it")
    }

    @Test func unsatisfiableWholeOrIgnored() {
        #expect(answer(["Range": "bytes=1000-"]) == .unsatisfiable)
        #expect(answer(["Range": "bytes=-0"]) == .unsatisfiable)
        #expect(answer(["Range": "bytes=0-1,5-6"]) == .whole, "several ranges: the whole response")
        #expect(answer(["Range": "items=0-1"]) == .whole, "another unit")
        #expect(answer(["Range": "bytes=5-1"]) == .whole, "bad syntax is ignored")
        #expect(answer(["Range": "bytes=abc-"]) == .whole)
        #expect(answer([:]) == .whole)
        let notFound = Fixture.stored(["ETag": "\"v1\""], status: 404)
        #expect(rangeAnswer(request: ["Range": "bytes=0-1"], stored: notFound, size: 10) == .whole, "only a 200 has ranges")
    }

    @Test func ifRangeNeedsTheStoredValidator() {
        #expect(answer(["Range": "bytes=0-1", "If-Range": "\"v1\""]) == .part(0..<2))
        #expect(answer(["Range": "bytes=0-1", "If-Range": "\"v2\""]) == .whole)
        #expect(answer(["Range": "bytes=0-1", "If-Range": "W/\"v1\""]) == .whole, "a weak tag never matches")
        #expect(answer(["Range": "bytes=0-1", "If-Range": "Tue, 01 Dec 2026 10:00:00 GMT"]) == .part(0..<2))
        #expect(answer(["Range": "bytes=0-1", "If-Range": "Tue, 01 Dec 2026 09:00:00 GMT"]) == .whole)
    }

    @Test func theHeadersOfTheAnswers() {
        let h = partialContentHeaders(["Content-Length": "1000", "ETag": "\"v1\""], range: 10..<20, size: 1000)
        #expect(h.first("content-length") == "10" && h.first("content-range") == "bytes 10-19/1000" && h.first("etag") == "\"v1\"")
        #expect(unsatisfiableRangeHeaders(size: 1000).first("content-range") == "bytes */1000")
    }

    @Test func contentRangesAndTheValidatorToResumeUnder() {
        #expect(contentRange("bytes 100-199/1000")! == (100, 199, 1000))
        #expect(contentRange("bytes 0-9/*")! == (0, 9, nil))
        #expect(contentRange("bytes */1000") == nil && contentRange("items 0-1/2") == nil && contentRange("bytes 5-1/9") == nil)
        #expect(contentRange("bytes 0-9/9") == nil, "the last byte is inside the total")
        #expect(ifRangeValidator(["ETag": "\"a\"", "Last-Modified": "x"]) == "\"a\"")
        #expect(ifRangeValidator(["ETag": "W/\"a\"", "Last-Modified": "x"]) == nil, "a weak tag never matches If-Range")
        #expect(ifRangeValidator(["Last-Modified": "x"]) == "x" && ifRangeValidator([:]) == nil)
    }
}
