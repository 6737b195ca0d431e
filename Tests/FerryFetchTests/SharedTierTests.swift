import Testing
@testable import FerryFetch
import FerryHTTPCache

@Suite struct SharedTierTests {
    static func record(_ cc: String, age: Int64 = 0, etag: Bool = false) -> [UInt8] {
        var fields: [(String, String)] = [("Cache-Control", cc)]
        if etag { fields.append(("ETag", "\"v1\"")) }
        return StoredRecord.encode(StoredResponse(status: 200, headers: HTTPFields(fields), requestTime: 1000 - age, responseTime: 1000 - age),
                                   body: [1, 2, 3])
    }

    @Test func lifetimeIsWhatTheResponseIsStillWorth() {
        let key = "GET https://a.test/x"
        #expect(SharedTier.lifetimeMs(key: key, record: Self.record("max-age=60"), now: 1000) == 60_000)
        #expect(SharedTier.lifetimeMs(key: key, record: Self.record("max-age=60", age: 20), now: 1000) == 40_000)
        #expect(SharedTier.lifetimeMs(key: key, record: Self.record("max-age=60, stale-while-revalidate=30"), now: 1000) == 90_000)
        #expect(SharedTier.lifetimeMs(key: key, record: Self.record("max-age=0"), now: 1000) == nil, "worth nothing: kept local")
        #expect(SharedTier.lifetimeMs(key: key, record: Self.record("max-age=0", etag: true), now: 1000) == 60_000,
                "a validator makes it worth a revalidation's 304")
        #expect(SharedTier.lifetimeMs(key: key, record: StoredRecord.encodeVaryMarker("Accept", generation: 1), now: 1000) == SharedTier.markerLifetimeMs)
    }

    @Test func partitionsAndPartialsStayLocalAndARecordWithItsBodyApartNamesIt() {
        let fresh = Self.record("max-age=60")
        #expect(SharedTier.lifetimeMs(key: "GET https://a.test/x (partition abc)", record: fresh, now: 1000) == nil)
        #expect(SharedTier.lifetimeMs(key: "GET https://a.test/x (partition abc)", record: fresh, now: 1000, partitions: true) == 60_000,
                "with a fleet partition secret")
        #expect(!SharedTier.isShareable(key: "GET https://a.test/x (partition abc)\u{0}partial", partitions: true))
        #expect(SharedTier.lifetimeMs(key: "GET https://a.test/x\u{0}partial", record: fresh, now: 1000) == nil)
        #expect(SharedTier.lifetimeMs(key: "GET https://a.test/x\u{0}body\u{0}1", record: fresh, now: 1000) == nil)
        let apart = StoredRecord.encode(StoredResponse(status: 200, headers: ["Cache-Control": "max-age=60"], requestTime: 1000, responseTime: 1000),
                                        bodyKey: "GET https://a.test/x\u{0}body\u{0}1", size: 9)
        #expect(SharedTier.lifetimeMs(key: "GET https://a.test/x", record: apart, now: 1000) == 60_000)
        #expect(SharedTier.sharing(key: "GET https://a.test/x", record: apart, now: 1000)!.bodyApart! == ("GET https://a.test/x\u{0}body\u{0}1", 9))
        #expect(SharedTier.sharing(key: "GET https://a.test/x", record: fresh, now: 1000)!.bodyApart == nil)
        #expect(SharedTier.isBody(key: "GET https://a.test/x\u{0}body\u{0}1") && !SharedTier.isBody(key: "GET https://a.test/x"))
        #expect(SharedTier.isShareable(key: "GET https://a.test/x\u{0}2a\u{0}accept=x"), "a variant of the shared cache is shared")
    }
}
