import Testing
@testable import FerryProtocol

@Suite struct CatalogTests {
    @Test func everyOperationDescribesItsFields() {
        #expect(OperationCatalog.v1.map(\.name) == ["hello", "ping", "describe", "stats", "cancel", "cache.set", "cache.get",
                                                     "cache.delete", "cache.touch", "cache.incr", "cache.list", "cache.clear", "fetch", "http.list", "http.show", "http.purge", "image.get", "image.prefetch", "image.evict"])
        for op in OperationCatalog.v1 {
            #expect(!op.summary.isEmpty)
            #expect(!op.result.isEmpty, "\(op.name) documents its result")
            #expect(["none", "echo", "value", "http"].contains(op.json["body"]?.stringValue ?? ""))
            #expect(OperationCatalog.descriptor(named: op.name)?.op == op.op, "look-up by wire name finds \(op.name)")
        }
        #expect(OperationCatalog.descriptor(.cancel).args.first?.required == true)
        #expect(OperationCatalog.descriptor(named: "cache.nope") == nil)
        #expect(OperationCatalog.fetch.events == [.head, .chunk, .progress] && OperationCatalog.fetch.body == .http)
    }

    @Test func limitsRoundTripThroughJSON() {
        var l = ProtocolLimits()
        l.maxFrameBytes = 123_456
        l.maxInFlight = 9
        #expect(ProtocolLimits(json: l.json) == l)
    }
}
