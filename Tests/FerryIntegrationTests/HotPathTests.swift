import Foundation
import Testing
import FerryProtocol

/// The fast path of the hot operations (`HotPath`) answers exactly as the general path does: the same request
/// sent in the plain shape (hot) and with a member only the general path reads (`timeout_ms`, which changes
/// nothing in the reply) gets the same bytes, and both are counted alike.
extension IntegrationTests {
@Suite struct HotPathTests {
    static func frame(_ json: String, body: [UInt8] = []) -> [UInt8] {
        let j = Array(json.utf8)
        func be32(_ n: Int) -> [UInt8] { [UInt8(n >> 24 & 255), UInt8(n >> 16 & 255), UInt8(n >> 8 & 255), UInt8(n & 255)] }
        return be32(j.count) + be32(body.count) + j + body
    }

    /// The reply to `json` on the hot path and to the same request with `timeout_ms` (the general path).
    static func bothPaths(_ socket: RawSocket, _ json: String, body: [UInt8] = []) throws -> (hot: [UInt8], general: [UInt8]) {
        try socket.send(frame(json, body: body))
        let hot = try #require(try socket.readRawFrame())
        try socket.send(frame(String(json.dropLast()) + #","timeout_ms":60000}"#, body: body))
        let general = try #require(try socket.readRawFrame())
        return (hot, general)
    }

    @Test func theHotAndTheGeneralPathGiveTheSameBytes() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let s = try RawSocket(daemon.socket)
        try s.hello()
        try s.send(["id": 2, "op": "cache.set", "args": ["key": "user:1"]], body: Array("alice".utf8))
        try s.send(["id": 3, "op": "cache.set", "args": ["key": "k", "namespace": "app", "ttl_ms": 600_000]], body: [1, 2, 3])
        try s.send(["id": 4, "op": "cache.set", "args": ["key": "empty"]])
        for _ in 0..<3 { #expect(try s.readReply().map { if case .result = $0 { true } else { false } } == true) }
        let cases: [(String, [UInt8])] = [
            (#"{"id":10,"op":"cache.get","args":{"key":"user:1"}}"#, []),
            (#"{"id":11,"op":"cache.get","args":{"namespace":"app","key":"k"}}"#, []),  // with expires_at
            (#"{"id":12,"op":"cache.get","args":{"key":"empty"}}"#, []),
            (#"{"id":13,"op":"cache.get","args":{"key":"missing"}}"#, []),              // not_found: general both times
            (#"{ "id" : 14 , "op" : "ping" }"#, []),
            (#"{"id":15,"op":"ping","args":{}}"#, Array("echo".utf8)),
            (#"{"id":9007199254740,"op":"ping"}"#, [0, 255]),
            (#"{"id":16,"op":"cache.set","args":{"key":"hot:set"}}"#, Array("v".utf8)),   // answered after the journal
            (#"{"id":17,"op":"cache.set","args":{"ttl_ms":5000,"key":"hot:ttl"}}"#, []),
            (#"{"id":18,"op":"cache.set","args":{"key":"hot:bad","ttl_ms":0}}"#, [1]),      // invalid: general both times
        ]
        for (json, body) in cases {
            let (hot, general) = try Self.bothPaths(s, json, body: body)
            #expect(hot == general, "\(json): \(String(decoding: hot, as: UTF8.self)) vs \(String(decoding: general, as: UTF8.self))")
        }
        try s.send(["id": 20, "op": "stats"])
        let (stats, _) = try #require(try s.readFrame())
        let ops = stats["result"]?["ops"]
        #expect(ops?["cache.get"]?["requests"]?.intValue == 8 && ops?["ping"]?["requests"]?.intValue == 6,
                "both paths counted: \(String(describing: ops))")
        #expect(ops?["cache.set"]?["requests"]?.intValue == 9 && ops?["cache.set"]?["errors"]?.intValue == 2,
                "3 sets, 3 both ways, the two invalid ones: \(String(describing: ops))")
        #expect(ops?["cache.get"]?["errors"]?.intValue == 2, "the two not_found")
        #expect(stats["result"]?["requests"]?["total"]?.intValue == 25, "hello, 3 sets, 20, and this stats")
        #expect(stats["result"]?["requests"]?["in_flight"]?.intValue == 0, "every set settled")
        // The values the fast path stored are there.
        try s.send(["id": 21, "op": "cache.get", "args": ["key": "hot:set"]])
        let (_, value) = try #require(try s.readFrame())
        #expect(value == Array("v".utf8))
    }

    /// A set waiting for its journal write on the fast path is in flight: the same id again is the protocol error
    /// of the duplicate-id rule, and the earlier set then gets no frame.
    @Test func aPendingFastSetIsInFlightForTheDuplicateIDRule() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let s = try RawSocket(daemon.socket)
        try s.hello()
        let set = Self.frame(#"{"id":5,"op":"cache.set","args":{"key":"dup"}}"#, body: [1])
        try s.send(set + set)
        let (reply, _) = try #require(try s.readFrame())
        #expect(reply["id"]?.intValue == 5 && reply["error"]?["code"]?.stringValue == "protocol_error", "\(reply)")
        #expect(try s.isClosedByPeer(), "closed after the protocol error, with no frame for the first set")
    }
}
}
