import Testing
@testable import FerryFetch
import FerryHTTPCache
import FerryStore

/// The catalog reads `ResponseStore`'s layout: a URL's keys (record, variants, bodies, partial, partitions) form
/// one run in byte order, a page never splits one, and looking is peeking.
@Suite struct ResponseCatalogTests {
    static func response(_ cc: String, age: Int64 = 0, vary: String? = nil) -> StoredResponse {
        StoredResponse(status: 200, headers: HTTPFields([("Cache-Control", cc)]), requestTime: 1000 - age, responseTime: 1000 - age,
                       varyKey: vary, bodySize: 3)
    }

    /// Three URLs where one is a prefix of another ("/a" and "/a/b"), with a Vary'd URL, a partition, a body stored
    /// apart and a partial: the keys interleave in byte order only as the layout promises.
    static func filled() -> MemoryStorage {
        let s = MemoryStorage()
        s.put("GET http://t/a", StoredRecord.encode(response("max-age=60"), bodyKey: "GET http://t/a\u{0}body\u{0}1", size: 3))
        s.put("GET http://t/a\u{0}body\u{0}1", [1, 2, 3])
        s.put("GET http://t/a\u{0}partial", StoredRecord.encode(response("max-age=60"), body: [9]))
        s.put("GET http://t/a (partition p1)", StoredRecord.encode(response("max-age=60"), body: [1]))
        s.put("GET http://t/a (partition p2)", StoredRecord.encode(response("max-age=60"), body: [1]))
        s.put("GET http://t/a/b", StoredRecord.encode(response("max-age=10", age: 20), body: [1, 2, 3]))
        s.put("GET http://t/v", StoredRecord.encodeVaryMarker("Accept", generation: 0x2a))
        s.put("GET http://t/v\u{0}2a\u{0}accept=x", StoredRecord.encode(response("max-age=60", vary: "accept=x"), body: [1]))
        s.put("GET http://t/v\u{0}2a\u{0}accept=y", StoredRecord.encode(response("max-age=60", vary: "accept=y"), body: [1]))
        s.put("GET http://t/v\u{0}29\u{0}accept=old", StoredRecord.encode(response("max-age=60", vary: "accept=old"), body: [1]))
        return s
    }

    static func page(_ catalog: ResponseCatalog, prefix: String = "", after: String? = nil, limit: Int) -> CachedURLPage? {
        var out: CachedURLPage?
        catalog.list(prefix: prefix, after: after, limit: limit, now: 1000) { out = try? $0.get() }
        return out
    }

    @Test func pagesHoldWholeURLs() throws {
        let storage = Self.filled()
        let catalog = ResponseCatalog(storage: storage)
        var seen: [String] = [], cursor: String?
        repeat {
            let page = try #require(Self.page(catalog, after: cursor, limit: 1))
            #expect(page.urls.count == 1)
            seen += page.urls.map(\.url)
            cursor = page.cursor
        } while cursor != nil
        #expect(seen == ["http://t/a", "http://t/a/b", "http://t/v"])
        let all = try #require(Self.page(catalog, limit: 10))
        let a = all.urls[0], ab = all.urls[1], v = all.urls[2]
        #expect(a.partitions == 2 && a.partial && a.responses.count == 1 && a.responses[0].fresh)
        #expect(a.bytes == storage.records.filter { $0.key.hasPrefix("GET http://t/a") && !$0.key.hasPrefix("GET http://t/a/") }.values.map(\.count).reduce(0, +))
        #expect(ab.responses[0].age == 20 && !ab.responses[0].fresh && ab.partitions == 0)
        #expect(v.vary == "Accept" && v.responses.map(\.variantKey) == ["accept=x", "accept=y"], "the old generation is not counted")
        #expect(storage.peeks > 0)
        #expect(try #require(Self.page(catalog, prefix: "http://t/a/", limit: 10)).urls.map(\.url) == ["http://t/a/b"])
    }

    @Test func purgeTakesEveryKeyOfTheURLAndNoOther() throws {
        let storage = Self.filled()
        let catalog = ResponseCatalog(storage: storage)
        var removed: Int?
        catalog.purge(url: "http://t/a") { removed = try? $0.get() }
        #expect(removed == 5)
        #expect(storage.records.keys.sorted() == ["GET http://t/a/b", "GET http://t/v", "GET http://t/v\u{0}29\u{0}accept=old",
                                                  "GET http://t/v\u{0}2a\u{0}accept=x", "GET http://t/v\u{0}2a\u{0}accept=y"].sorted())
        var shown: CachedURL??
        catalog.show(url: "http://t/a", now: 1000) { shown = try? $0.get() }
        #expect(shown == .some(nil))
        var urls: Int?
        catalog.purge(prefix: "http://t/") { urls = try? $0.get() }
        #expect(urls == 2 && storage.records.isEmpty)
    }
}
