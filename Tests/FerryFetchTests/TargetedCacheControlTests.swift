import Testing
@testable import FerryFetch
import FerryHTTPCache

/// RFC 9213: a targeted field this cache obeys wins over Cache-Control and Expires for storing and freshness,
/// and clients still see the origin's Cache-Control.
@Suite struct TargetedCacheControlTests {
    static func harness(_ targets: [String] = ["Ferry-Cache-Control"]) -> EngineHarness {
        var config = FetchEngine.Config()
        config.targets = TargetedCacheControl(fields: targets)
        return EngineHarness(config: config)
    }

    @Test func theTargetedFieldDecidesAndTheClientSeesTheOrigins() {
        let h = Self.harness()
        h.fetch("http://o.test/a")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "no-store"), ("Ferry-Cache-Control", "max-age=600")], body: "kept")
        let hit = h.fetch("http://o.test/a")
        #expect(hit.outcome?.cache == .hit && hit.text == "kept", "stored by the targeted field despite no-store")
        #expect(hit.outcome?.headers.values("cache-control") == ["no-store"], "the client sees the origin's Cache-Control")
        #expect(hit.outcome?.headers.contains("ferry-targeted") == false)
        h.fetch("http://o.test/b")
        h.origin.exchanges[1].respond(200, [("Cache-Control", "max-age=600"), ("Ferry-Cache-Control", "no-store")], body: "x")
        #expect(h.fetch("http://o.test/b").result == nil, "not stored: the targeted no-store wins")
    }

    @Test func theFirstTargetPresentWinsAndAnInvalidOneIsIgnored() {
        let h = Self.harness(["CDN-Cache-Control", "Ferry-Cache-Control"])
        h.fetch("http://o.test/c")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "no-store"),
                                            ("Ferry-Cache-Control", "max-age=600")])
        #expect(h.fetch("http://o.test/c").result == nil, "CDN-Cache-Control comes first")
        h.fetch("http://o.test/d")
        h.origin.exchanges[2].respond(200, [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "@@@")], body: "d")
        #expect(h.fetch("http://o.test/d").outcome?.cache == .hit, "a field that does not parse is ignored: Cache-Control applies")
        h.fetch("http://o.test/e")
        h.origin.exchanges[3].respond(200, [("Expires", "Thu, 01 Jan 1970 00:00:00 GMT"), ("CDN-Cache-Control", "max-age=600")], body: "e")
        #expect(h.fetch("http://o.test/e").outcome?.cache == .hit, "the targeted field overrides Expires too")
    }
}
