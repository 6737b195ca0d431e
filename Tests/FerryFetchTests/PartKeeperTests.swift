#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import FerryFetch

/// Parts of responses (RFC 9111 §3.3–3.4): an origin's 206 is kept, ranges inside it are served from it, and parts
/// that meet under one strong validator are joined, up to the whole body, which is then a stored response.
@Suite struct PartKeeperTests {
    static let url = "http://o.test/v"

    @discardableResult
    static func ranged(_ h: EngineHarness, _ range: String, _ extra: [(String, String)] = []) -> EngineHarness.Pending {
        h.fetch(url) { $0.headers = [("Range", range)] + extra }
    }

    static func part(_ first: Int, _ text: String, etag: String? = "\"v1\"", total: Int = 10) -> [(String, String)] {
        var fields = [("Cache-Control", "max-age=3600"), ("Content-Range", "bytes \(first)-\(first + text.count - 1)/\(total)")]
        if let etag { fields.append(("ETag", etag)) }
        return fields
    }

    /// The body, in memory or spooled.
    static func body(_ p: EngineHarness.Pending) -> String? {
        switch p.outcome?.body {
        case .spool(let s)?: return String(decoding: BodySpoolTests.readAll(s), as: UTF8.self)
        default: return p.text
        }
    }

    @Test func aPartAnswersTheRangesInsideItAndJoinsTheNextIntoTheWhole() throws {
        let dir = BodySpoolTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var spool = BodySpool.Config(directory: dir)
        spool.memoryBytes = 3  // parts of more than 3 bytes are spooled to files, and joined from them
        let h = EngineHarness(spool: spool)
        let first = PartKeeperTests.ranged(h, "bytes=-5")
        h.origin.exchanges[0].respond(206, PartKeeperTests.part(5, "56789"), body: "56789")
        #expect(first.outcome?.status == 206 && PartKeeperTests.body(first) == "56789" && first.outcome?.cache == .miss)

        let inside = PartKeeperTests.ranged(h, "bytes=6-8")
        #expect(inside.outcome?.cache == .hit && inside.outcome?.status == 206 && inside.text == "678")
        #expect(inside.outcome?.headers.first("content-range") == "bytes 6-8/10")
        #expect(PartKeeperTests.ranged(h, "bytes=-1").text == "9")
        #expect(PartKeeperTests.ranged(h, "bytes=7-").text == "789")
        #expect(PartKeeperTests.ranged(h, "bytes=20-").outcome?.status == 416, "the part knows the whole's length")
        #expect(h.origin.exchanges.count == 1, "all from the part")

        let outside = PartKeeperTests.ranged(h, "bytes=0-4")
        #expect(h.origin.exchanges.count == 2, "a range the part does not hold goes to the origin")
        h.origin.exchanges[1].respond(206, PartKeeperTests.part(0, "01234"), body: "01234")
        #expect(PartKeeperTests.body(outside) == "01234")
        #expect(h.engine.stats.partsCombined == 1)
        let whole = h.fetch(PartKeeperTests.url)
        #expect(whole.outcome?.status == 200 && whole.outcome?.cache == .hit && whole.text == "0123456789")
        #expect(PartKeeperTests.ranged(h, "bytes=2-7").text == "234567")
        #expect(h.origin.exchanges.count == 2, "the joined parts are the stored response")
    }

    @Test func partsWithoutOneValidatorAreServedButNeverJoined() {
        let h = EngineHarness()
        PartKeeperTests.ranged(h, "bytes=-5")
        h.origin.exchanges[0].respond(206, PartKeeperTests.part(5, "56789", etag: nil), body: "56789")
        #expect(PartKeeperTests.ranged(h, "bytes=6-8").text == "678", "served from a fresh part without a validator")
        PartKeeperTests.ranged(h, "bytes=0-4")
        h.origin.exchanges[1].respond(206, PartKeeperTests.part(0, "01234", etag: nil), body: "01234")
        #expect(h.engine.stats.partsCombined == 0)
        h.fetch(PartKeeperTests.url)
        #expect(h.origin.exchanges.count == 3, "no whole was made")
        #expect(h.origin.exchanges[2].header("range") == nil, "and without a validator nothing is resumed")

        let other = EngineHarness()
        PartKeeperTests.ranged(other, "bytes=-5")
        other.origin.exchanges[0].respond(206, PartKeeperTests.part(5, "56789", etag: "\"v1\""), body: "56789")
        PartKeeperTests.ranged(other, "bytes=0-4")
        other.origin.exchanges[1].respond(206, PartKeeperTests.part(0, "abcde", etag: "\"v2\""), body: "abcde")
        #expect(other.engine.stats.partsCombined == 0, "a new representation replaces the part")
        #expect(PartKeeperTests.ranged(other, "bytes=1-2").text == "bc")
        #expect(other.origin.exchanges.count == 2)
    }

    @Test func aPartFromZeroIsResumedAndAPartOfAnotherVariantIsNotServed() {
        let h = EngineHarness()
        PartKeeperTests.ranged(h, "bytes=0-3", [("Accept-Language", "fr")])
        h.origin.exchanges[0].respond(206, PartKeeperTests.part(0, "0123") + [("Vary", "Accept-Language")], body: "0123")
        PartKeeperTests.ranged(h, "bytes=0-1", [("Accept-Language", "de")])
        #expect(h.origin.exchanges.count == 2, "another variant's part is not served")
        h.origin.exchanges[1].respond(206, PartKeeperTests.part(0, "01") + [("Vary", "Accept-Language")], body: "01")
        PartKeeperTests.ranged(h, "bytes=1-2", [("Accept-Language", "de")])
        #expect(h.origin.exchanges.count == 2, "its own variant's part is")

        let r = EngineHarness()
        PartKeeperTests.ranged(r, "bytes=0-3")
        r.origin.exchanges[0].respond(206, PartKeeperTests.part(0, "0123"), body: "0123")
        let whole = r.fetch(PartKeeperTests.url)
        #expect(r.origin.exchanges[1].header("range") == "bytes=4-" && r.origin.exchanges[1].header("if-range") == "\"v1\"")
        r.origin.exchanges[1].respond(206, PartKeeperTests.part(4, "456789"), body: "456789")
        #expect(whole.outcome?.status == 200 && whole.text == "0123456789")
    }
}
