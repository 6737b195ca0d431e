import Testing
@testable import FerryHTTPCache

/// Stored parts (RFC 9111 §3.3–3.4): the record a part is kept as, and how a new part combines with a stored one.
@Suite struct StoredPartTests {
    static func whole(_ etag: String? = "\"v1\"", total: Int = 10) -> StoredResponse {
        var fields: HTTPFields = ["Cache-Control": "max-age=3600", "Content-Length": String(total)]
        if let etag { fields = fields.appending("ETag", etag) }
        return Fixture.stored(fields)
    }

    static func part(_ range: Range<Int>, etag: String? = "\"v1\"", total: Int = 10) -> StoredPart {
        StoredPart(whole: whole(etag, total: total), range: range, total: total)
    }

    @Test func aPartIsKeptAsA206RecordAndReadBack() throws {
        let part = StoredPartTests.part(4..<10)
        let record = part.record
        #expect(record.status == 206 && record.bodySize == 6)
        #expect(record.headers.first("content-range") == "bytes 4-9/10" && record.headers.first("content-length") == "6")
        let back = try #require(StoredPart(record: record, bodySize: 6))
        #expect(back.range == 4..<10 && back.total == 10 && back.whole.status == 200)
        #expect(back.whole.headers.first("content-length") == "10" && !back.whole.headers.contains("content-range"))
        #expect(StoredPart(record: record, bodySize: 5) == nil, "a body of another length than its range is no part")
    }

    @Test func anOlderRecordOfAnInterruptedDownloadIsThePartFromZero() throws {
        let old = StoredPartTests.whole()
        let back = try #require(StoredPart(record: old, bodySize: 4))
        #expect(back.range == 0..<4 && back.total == 10)
        #expect(StoredPart(record: old, bodySize: 10) == nil, "a complete body is no part")
        #expect(StoredPart(record: Fixture.stored([:], status: 404), bodySize: 3) == nil)
    }

    @Test func partsThatMeetUnderOneValidatorCombine() {
        let p = StoredPartTests.part
        #expect(mergeParts(stored: p(0..<5, "\"v1\"", 10), new: p(5..<10, "\"v1\"", 10)) == .combine(0..<10), "adjacent")
        #expect(mergeParts(stored: p(6..<10, "\"v1\"", 10), new: p(2..<8, "\"v1\"", 10)) == .combine(2..<10), "overlapping")
        #expect(mergeParts(stored: p(3..<5, "\"v1\"", 10), new: p(0..<10, "\"v1\"", 10)) == .replace, "the new one holds it")
        #expect(mergeParts(stored: p(0..<10, "\"v1\"", 10), new: p(3..<5, "\"v1\"", 10)) == .refresh, "the stored one holds it")
    }

    @Test func partsWithoutTheSameStrongValidatorNeverCombine() {
        let p = StoredPartTests.part
        #expect(mergeParts(stored: p(0..<5, "\"v1\"", 10), new: p(5..<10, "\"v2\"", 10)) == .replace, "another representation")
        #expect(mergeParts(stored: p(0..<5, nil, 10), new: p(5..<10, nil, 10)) == .replace, "no validator")
        #expect(mergeParts(stored: p(0..<5, "W/\"v1\"", 10), new: p(5..<10, "W/\"v1\"", 10)) == .replace, "a weak one")
        #expect(mergeParts(stored: p(0..<5, "\"v1\"", 10), new: p(5..<11, "\"v1\"", 11)) == .replace, "another length")
    }

    @Test func disjointPartsKeepTheStartAPlainGetResumesFrom() {
        let p = StoredPartTests.part
        #expect(mergeParts(stored: p(0..<3, "\"v1\"", 10), new: p(6..<10, "\"v1\"", 10)) == .refresh)
        #expect(mergeParts(stored: p(2..<3, "\"v1\"", 10), new: p(6..<10, "\"v1\"", 10)) == .replace)
    }
}
