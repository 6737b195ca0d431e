import Testing
import FerryProtocol
@testable import FerryClient

/// The two ways a request becomes frames: encoded in place into the outbox (`appendFrame`, the common small
/// request) and as frames of its own (`frames`, any size). For every request one of them takes, the bytes agree.
@Suite struct ClientFramesTests {
    static let limits = (frame: 4096, json: 1024)

    static func requests() -> [(RequestEnvelope, [UInt8])] {
        [
            (RequestEnvelope(id: 1, op: "ping"), []),
            (RequestEnvelope(id: 9_007_199_254_740_991, op: "cache.get", args: ["key": "k\u{e9}\"y"]), []),
            (RequestEnvelope(id: 42, op: "cache.set", args: ["key": "a", "ttl_ms": 1500], timeoutMs: 250), Array("value".utf8)),
            (RequestEnvelope(id: 7, op: "ping"), [UInt8](repeating: 0xAB, count: 4000)),
        ]
    }

    @Test func inPlaceAndOwnFramesAreTheSameBytes() throws {
        for (envelope, body) in Self.requests() {
            var bytes: [UInt8] = [1, 2, 3]   // something queued before: kept as it was
            let outcome = ClientConnection.appendFrame(envelope, body: body, limits: Self.limits, to: &bytes)
            let frames = try ClientConnection.frames(envelope, body: body, maxFrameBytes: Self.limits.frame,
                                                     maxJSONBytes: Self.limits.json).get()
            #expect(outcome == .appended)
            #expect(frames.count == 1)
            #expect(bytes == [1, 2, 3] + frames[0])
        }
    }

    @Test func aRequestLargerThanAFrameIsLeftToFrames() throws {
        let envelope = RequestEnvelope(id: 3, op: "ping"), body = [UInt8](repeating: 1, count: Self.limits.frame)
        var bytes: [UInt8] = [9]
        #expect(ClientConnection.appendFrame(envelope, body: body, limits: Self.limits, to: &bytes) == .needsFrames)
        #expect(bytes == [9], "nothing appended")
        let frames = try ClientConnection.frames(envelope, body: body, maxFrameBytes: Self.limits.frame,
                                                 maxJSONBytes: Self.limits.json).get()
        #expect(frames.count == 2)
    }

    @Test func anEnvelopeOverTheJSONLimitIsRefusedByBoth() {
        let envelope = RequestEnvelope(id: 3, op: "cache.get", args: ["key": .string(String(repeating: "k", count: 2000))])
        var bytes: [UInt8] = []
        guard case .refused(let e) = ClientConnection.appendFrame(envelope, body: [], limits: Self.limits, to: &bytes) else {
            Issue.record("an envelope over the limit must be refused")
            return
        }
        #expect(e.code == .resourceExhausted && bytes.isEmpty)
        guard case .failure(let other) = ClientConnection.frames(envelope, body: [], maxFrameBytes: Self.limits.frame,
                                                                  maxJSONBytes: Self.limits.json) else {
            Issue.record("frames must refuse it too")
            return
        }
        #expect(other == e)
    }
}
