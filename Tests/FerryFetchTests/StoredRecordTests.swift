import Testing
@testable import FerryFetch
import FerryHTTPCache

/// The byte format of stored responses and vary markers, and what decoding does with damaged records.
@Suite struct StoredRecordTests {
    @Test func aResponseRoundTrips() {
        let response = StoredResponse(status: 203, headers: HTTPFields([("Content-Type", "text/plain"), ("Set-Thing", "a"), ("Set-Thing", "b")]),
                                      requestTime: 1_800_000_000, responseTime: 1_800_000_002, varyKey: "accept=text/a", bodySize: 5)
        let record = StoredRecord.encode(response, body: Array("hello".utf8))
        guard case .response(let decoded, let body)? = StoredRecord.decode(record) else { Issue.record("decodes"); return }
        #expect(decoded == response && body == .inline(Array("hello".utf8)[...]))
    }

    @Test func aVaryMarkerRoundTrips() {
        guard case .varyMarker(let vary, let generation)? = StoredRecord.decode(StoredRecord.encodeVaryMarker("Accept, Accept-Language", generation: 0xDEAD_BEEF)) else {
            Issue.record("decodes")
            return
        }
        #expect(vary == "Accept, Accept-Language" && generation == 0xDEAD_BEEF)
    }

    @Test func damagedRecordsDecodeToNothing() {
        let response = StoredResponse(status: 200, headers: HTTPFields([("A", "b")]), requestTime: 1, responseTime: 2, bodySize: 0)
        let record = StoredRecord.encode(response, body: [])
        for cut in 1..<record.count - 1 where cut != record.count {
            // Every cut inside the header section is refused; a cut in the (empty) body cannot happen here.
            #expect(StoredRecord.decode(Array(record.prefix(cut))) == nil, "cut at \(cut)")
        }
        #expect(StoredRecord.decode([]) == nil && StoredRecord.decode([9, 0, 0]) == nil)
    }

    @Test func variantsOfOneURLLiveSideBySide() {
        let h = EngineHarness()
        h.fetch("http://o.test/v") { $0.headers = [("Accept", "text/a")] }
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=600"), ("Vary", "Accept")], body: "A")
        h.fetch("http://o.test/v") { $0.headers = [("Accept", "text/b")] }
        h.origin.exchanges[1].respond(200, [("Cache-Control", "max-age=600"), ("Vary", "Accept")], body: "B")
        #expect(h.fetch("http://o.test/v") { $0.headers = [("Accept", "text/a")] }.text == "A")
        #expect(h.fetch("http://o.test/v") { $0.headers = [("Accept", "text/b")] }.text == "B")
        #expect(h.storage.records.count == 3, "one marker and two variants")
    }
}
