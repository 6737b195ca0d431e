import Testing
@testable import FerryProtocol

@Suite struct CatalogTests {
    @Test func everyOperationDescribesItsFields() {
        #expect(OperationCatalog.v1.map(\.name) == ["hello", "ping", "describe", "stats", "cancel", "cache.set", "cache.get",
                                                     "cache.delete", "cache.touch", "cache.list", "cache.clear", "fetch", "image.get", "image.prefetch", "image.evict"])
        for op in OperationCatalog.v1 {
            #expect(!op.summary.isEmpty)
            #expect(!op.result.isEmpty, "\(op.name) documents its result")
            #expect(["none", "echo", "value", "http"].contains(op.body))
        }
        #expect(OperationCatalog.descriptor(named: "cancel")?.args.first?.required == true)
    }

    @Test func limitsRoundTripThroughJSON() {
        var l = ProtocolLimits()
        l.maxFrameBytes = 123_456
        l.maxInFlight = 9
        #expect(ProtocolLimits(json: l.json) == l)
    }
}
