import Testing
@testable import FerryHTTPCache

@Suite struct VariantTests {
    @Test func noVaryMatchesEverything() {
        #expect(variantKey(forVary: nil, request: ["Foo": "1"]) == "")
        #expect(variantKey(forVary: "", request: ["Foo": "1"]) == "")
        #expect(variantKey(forVary: " , ", request: [:]) == "")
    }

    @Test func starNeverMatches() {
        for vary in ["*", "*, *", ", *", "Foo, *", "*, Foo"] {
            #expect(variantKey(forVary: vary, request: ["Foo": "1"]) == nil, "\(vary)")
        }
        #expect(variantKey(forVaryOf: ["Vary": "", "Vary": "*"], request: [:]) == nil)
    }

    @Test func sameAndDifferentValues() {
        let a = variantKey(forVary: "Foo", request: ["Foo": "1"])
        #expect(a == "foo=1")
        #expect(variantKey(forVary: "Foo", request: ["foo": "1"]) == a)
        #expect(variantKey(forVary: "Foo", request: ["Foo": "2"]) != a)
    }

    @Test func acceptEncodingAndLanguageCompareWithoutOrderCaseOrSpaces() {
        let a = variantKey(forVary: "Accept-Encoding", request: ["Accept-Encoding": "gzip, br"])
        #expect(variantKey(forVary: "Accept-Encoding", request: ["Accept-Encoding": "BR,gzip"]) == a)
        #expect(variantKey(forVary: "Accept-Encoding", request: ["Accept-Encoding": "gzip"]) != a)
        let l = variantKey(forVary: "Accept-Language", request: ["Accept-Language": "de, en;q=0.5"])
        #expect(variantKey(forVary: "Accept-Language", request: ["Accept-Language": "EN ; q=0.5,de"]) == l)
        #expect(variantKey(forVary: "Accept-Language", request: ["Accept-Language": "de, en;q=0.9"]) != l, "weights count")
        #expect(variantKey(forVary: "X-Order", request: ["X-Order": "b, a"]) != variantKey(forVary: "X-Order", request: ["X-Order": "a, b"]),
                "other fields keep their order")
    }

    @Test func aCredentialIsKeptOnlyAsADigest() {
        let key = variantKey(forVary: "Authorization", request: ["Authorization": "Bearer s3cret"])
        #expect(key?.contains("s3cret") == false && key?.hasPrefix("authorization#") == true)
        #expect(key == variantKey(forVary: "Authorization", request: ["Authorization": "Bearer s3cret"]))
        #expect(key != variantKey(forVary: "Authorization", request: ["Authorization": "Bearer other"]))
    }

    @Test func absentDiffersFromEmpty() {
        let absent = variantKey(forVary: "Foo", request: [:])
        let empty = variantKey(forVary: "Foo", request: ["Foo": ""])
        #expect(absent == "foo")
        #expect(empty == "foo=")
        #expect(absent != empty)
    }

    @Test func namesAreCaseInsensitiveSortedAndDeduplicated() {
        let k1 = variantKey(forVary: "Foo, Bar", request: ["foo": "1", "BAR": "abc"])
        let k2 = variantKey(forVary: "bar, FOO, foo", request: ["Bar": "abc", "Foo": "1"])
        #expect(k1 == "bar=abc\nfoo=1")
        #expect(k1 == k2)
    }

    @Test func multipleVaryLinesCombine() {
        let key = variantKey(forVaryOf: ["Vary": "Foo", "vary": "Bar, Baz"], request: ["Foo": "1", "Baz": "789"])
        #expect(key == "bar\nbaz=789\nfoo=1")
    }

    @Test func headersNotListedDoNotMatter() {
        #expect(variantKey(forVary: "Foo", request: ["Foo": "1", "Other": "2"]) == variantKey(forVary: "Foo", request: ["Foo": "1", "Other": "3"]))
    }

    @Test func whitespaceAndLineSplittingAreNormalised() {
        let compact = variantKey(forVary: "Foo", request: ["Foo": "1,2"])
        #expect(variantKey(forVary: "Foo", request: ["Foo": " 1, 2 "]) == compact)
        #expect(variantKey(forVary: "Foo", request: HTTPFields([("Foo", "1"), ("Foo", "2")])) == compact)
        #expect(variantKey(forVary: "Foo", request: ["Foo": "2, 1"]) != compact, "order is significant")
        #expect(variantKey(forVary: "Foo", request: ["Foo": "A"]) != variantKey(forVary: "Foo", request: ["Foo": "a"]))
    }

    @Test func threeWayMatching() {
        let stored = Fixture.stored(["Vary": "Foo, Bar, Baz", "Cache-Control": "max-age=60"],
                                    request: Fixture.request(["Foo": "1", "Baz": "789"]))
        #expect(variantMatches(stored: stored, request: Fixture.request(["Foo": "1", "Baz": "789"])))
        #expect(!variantMatches(stored: stored, request: Fixture.request(["Foo": "1", "Bar": "", "Baz": "789"])))
        #expect(!variantMatches(stored: stored, request: Fixture.request(["Foo": "1"])))
    }

    @Test func varyNames() {
        #expect(varyFieldNames("Accept-Encoding, accept, ACCEPT") == ["accept", "accept-encoding"])
        #expect(varyFieldNames("Origin, *") == nil)
        #expect(varyFieldNames(nil) == [])
    }
}
