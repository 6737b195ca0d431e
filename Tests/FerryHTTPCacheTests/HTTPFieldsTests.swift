import Testing
@testable import FerryHTTPCache

@Suite struct HTTPFieldsTests {
    let fields: HTTPFields = ["Cache-Control": "max-age=60", "ETag": "\"v1\"", "cache-control": "public", "Set-Cookie": "a=1"]

    @Test func keepsOrderAndDuplicates() {
        #expect(fields.count == 4)
        #expect(fields.pairs.map(\.name) == ["Cache-Control", "ETag", "cache-control", "Set-Cookie"])
        #expect(fields.map(\.value) == ["max-age=60", "\"v1\"", "public", "a=1"])
    }

    @Test func lookupsIgnoreNameCase() {
        #expect(fields.values("CACHE-control") == ["max-age=60", "public"])
        #expect(fields.first("cache-CONTROL") == "max-age=60")
        #expect(fields.contains("etag"))
        #expect(!fields.contains("e-tag"))
        #expect(fields.first("Vary") == nil)
        #expect(fields.values("vary").isEmpty)
    }

    @Test func combinedJoinsLinesWithCommaSpace() {
        #expect(fields.combined("cache-control") == "max-age=60, public")
        #expect(fields.combined("vary") == nil)
        #expect((["X": ""] as HTTPFields).combined("x") == "", "an empty line is present, not absent")
    }

    @Test func listMembersSplitOutsideQuotes() {
        let f: HTTPFields = ["Connection": "close, X-A", "connection": "\"q,uoted\" ,, x-b"]
        #expect(f.listMembers("connection") == ["close", "X-A", "\"q,uoted\"", "x-b"])
    }

    @Test func removingAndAppendingReturnCopies() {
        let removed = fields.removingAll("Cache-Control")
        #expect(removed.count == 2 && !removed.contains("cache-control"))
        #expect(fields.count == 4, "the original is unchanged")
        let appended = removed.appending("Age", "3")
        #expect(appended.pairs.last?.name == "Age" && appended.first("age") == "3")
        #expect(fields.removingAll(names: ["ETAG", "set-cookie"]).pairs.map(\.name) == ["Cache-Control", "cache-control"])
        #expect(fields.appending(contentsOf: ["A": "1", "A": "2"]).values("a") == ["1", "2"])
    }

    @Test func replacingAllLeavesOneLineAtTheEnd() {
        let f: HTTPFields = ["Age": "1", "X": "x", "age": "2"]
        let r = f.replacingAll("AGE", with: "9")
        #expect(r.pairs.map(\.name) == ["X", "AGE"])
        #expect(r.values("age") == ["9"])
    }

    @Test func equalityComparesNamesCaseInsensitivelyAndValuesExactly() {
        #expect((["A": "1"] as HTTPFields) == (["a": "1"] as HTTPFields))
        #expect((["A": "1"] as HTTPFields) != (["A": "1 "] as HTTPFields))
        #expect((["A": "1", "B": "2"] as HTTPFields) != (["B": "2", "A": "1"] as HTTPFields), "order matters")
        #expect(HTTPFields([("A", "1")]) == (["A": "1"] as HTTPFields))
    }
}
