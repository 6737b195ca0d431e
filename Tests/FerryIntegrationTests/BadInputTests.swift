import Foundation
import Testing
import FerryClient
import FerryProtocol

/// Hostile and broken input over raw sockets. After each, a second, well-behaved client must still be served.
extension IntegrationTests {
@Suite struct BadInputTests {
    /// Sends `bytes` after a hello, expects one error reply with `code` (and `id`), then EOF or a working connection.
    func expectError(_ daemon: Daemon, bytes: [UInt8], code: ErrorCode, id: UInt64? = nil, closes: Bool,
                     helloFirst: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let raw = try RawSocket(daemon.socket)
        if helloFirst { try raw.hello() }
        try raw.send(bytes)
        guard case .error(let gotID, let e)? = try raw.readReply() else {
            Issue.record("no error reply", sourceLocation: sourceLocation)
            return
        }
        #expect(e.code == code, "\(e)", sourceLocation: sourceLocation)
        if let id { #expect(gotID == id, sourceLocation: sourceLocation) }
        if closes {
            #expect(try raw.isClosedByPeer(), "a protocol error closes the connection", sourceLocation: sourceLocation)
        } else {
            if !helloFirst { try raw.hello() }
            try raw.send(["id": 99, "op": "ping"])
            #expect(try raw.readReply() == .result(id: 99, ["pong": true]), "a call error leaves it open", sourceLocation: sourceLocation)
        }
    }

    func raw(_ json: String, body: [UInt8] = []) -> [UInt8] {
        let j = Array(json.utf8)
        return be32(j.count) + be32(body.count) + j + body
    }

    func be32(_ n: Int) -> [UInt8] { [UInt8(n >> 24 & 255), UInt8(n >> 16 & 255), UInt8(n >> 8 & 255), UInt8(n & 255)] }

    @Test func eachBadInputGetsItsDocumentedAnswer() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let bystander = try await FerryClient.connect(path: daemon.socket)
        defer { bystander.close() }

        // Framing broken: one protocol_error, then close.
        try expectError(daemon, bytes: be32(0x7FFF_FFFF) + be32(0), code: .protocolError, id: 0, closes: true)
        try expectError(daemon, bytes: be32(100) + be32(0x7FFF_FFFF), code: .protocolError, id: 0, closes: true)
        try expectError(daemon, bytes: Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), code: .protocolError, closes: true)
        try expectError(daemon, bytes: be32(0) + be32(0), code: .protocolError, closes: true)
        // Before hello, 64 KiB is the limit even for frames that would be fine later.
        try expectError(daemon, bytes: be32(100) + be32(70_000), code: .protocolError, closes: true, helloFirst: false)
        // Call errors: answered, connection stays open.
        try expectError(daemon, bytes: raw("{nope}"), code: .invalidArgument, id: 0, closes: false)
        try expectError(daemon, bytes: raw("[1,2]"), code: .invalidArgument, id: 0, closes: false)
        // JSON refused, but its id still readable: answered with it (a client waiting on id 1 is not left waiting).
        try expectError(daemon, bytes: [0, 0, 0, 18, 0, 0, 0, 0] + Array(#"{"id":1,"op":"p"#.utf8) + [0xFF] + Array(#""}"#.utf8),
                        code: .invalidArgument, id: 1, closes: false)
        try expectError(daemon, bytes: raw(#"{"id":9,"op":"ping","args":{"a":1,"a":2}}"#), code: .invalidArgument, id: 9, closes: false)
        try expectError(daemon, bytes: raw(#"{"op":"ping","args":{"s":"\ud800"},"id":10}"#), code: .invalidArgument, id: 10, closes: false)
        try expectError(daemon, bytes: raw(#"{"id":11,"op":"ping","id":12}"#), code: .invalidArgument, id: 0, closes: false)
        // null is absent, for the envelope and every operation's arguments.
        do {  // the socket closes at the end of the block (RawSocket's deinit)
            let plain = try RawSocket(daemon.socket)
            try plain.hello()
            try plain.send(raw(#"{"id":13,"op":"ping","args":{"delay_ms":null},"timeout_ms":null,"more":null}"#))
            #expect(try plain.readReply() == .result(id: 13, ["pong": true]))
            try plain.send(raw(#"{"id":14,"op":"ping","args":null}"#))
            #expect(try plain.readReply() == .result(id: 14, ["pong": true]))
        }
        try expectError(daemon, bytes: raw(#"{"op":"ping"}"#), code: .invalidArgument, id: 0, closes: false)
        try expectError(daemon, bytes: raw(#"{"id":"7","op":"ping"}"#), code: .invalidArgument, id: 0, closes: false)
        try expectError(daemon, bytes: raw(#"{"id":7}"#), code: .invalidArgument, id: 7, closes: false)
        try expectError(daemon, bytes: raw(#"{"id":7,"op":["ping"]}"#), code: .invalidArgument, id: 7, closes: false)
        try expectError(daemon, bytes: raw(#"{"id":7,"op":"nope"}"#), code: .unimplemented, id: 7, closes: false)
        // A body on an operation that takes none is refused, not ignored (the fast path's operations too).
        try expectError(daemon, bytes: raw(#"{"id":15,"op":"stats"}"#, body: [1, 2, 3]), code: .invalidArgument, id: 15, closes: false)
        try expectError(daemon, bytes: raw(#"{"id":16,"op":"cache.get","args":{"key":"k"}}"#, body: [1]), code: .invalidArgument, id: 16, closes: false)
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        try expectError(daemon, bytes: raw(#"{"id":7,"op":"ping","args":{"x":\#(deep)}}"#), code: .invalidArgument, id: 7, closes: false)
        try expectError(daemon, bytes: raw(#"{"id":7,"op":"ping"}"#), code: .failedPrecondition, id: 7, closes: false, helloFirst: false)
        // After hello the limit is max_frame_bytes.
        try expectError(daemon, bytes: be32(100) + be32(5 << 20), code: .protocolError, closes: true)

        _ = try await bystander.ping()
        let stats = try await bystander.stats()
        #expect((stats["errors"]?["protocol_error"]?.intValue ?? 0) >= 6)
        #expect(stats["connections"]?["open"]?.intValue == 1, "every broken connection was closed")
    }

    @Test func goldenInvalidVectorsOverTheWire() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let vectors = try JSONParser.parse(Array(try Data(contentsOf: url.appendingPathComponent("Protocol/vectors/frames.json"))), maxDepth: 64)
        for v in vectors["invalid"]?.arrayValue ?? [] {
            let hex = v["hex"]?.stringValue ?? ""
            var bytes: [UInt8] = []
            var i = hex.startIndex
            while i < hex.endIndex {
                let j = hex.index(i, offsetBy: 2)
                bytes.append(UInt8(hex[i..<j], radix: 16)!)
                i = j
            }
            let code = ErrorCode(rawValue: v["error"]?.stringValue ?? "")!
            let id = v["reply_id"]?.intValue.map(UInt64.init)
            #expect(id != nil, "every invalid vector says the id its reply names")
            try expectError(daemon, bytes: bytes, code: code, id: id, closes: code == .protocolError)
        }
    }

    @Test func duplicateIdInFlightIsAProtocolError() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawSocket(daemon.socket)
        try raw.hello()
        try raw.send(["id": 5, "op": "ping", "args": ["delay_ms": 2000]])
        try raw.send(["id": 5, "op": "ping"])
        guard case .error(5, let e)? = try raw.readReply() else {
            Issue.record("expected an error for id 5")
            return
        }
        #expect(e.code == .protocolError)
        #expect(try raw.isClosedByPeer())
        // Reusing an id after its request finished is fine.
        let again = try RawSocket(daemon.socket)
        try again.hello()
        try again.send(["id": 5, "op": "ping"])
        #expect(try again.readReply() == .result(id: 5, ["pong": true]))
        try again.send(["id": 5, "op": "ping"])
        #expect(try again.readReply() == .result(id: 5, ["pong": true]))
    }

    @Test func truncatedFrameAtEOFAndAbruptCloseHurtNobody() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let bystander = try await FerryClient.connect(path: daemon.socket)
        defer { bystander.close() }
        do {
            let raw = try RawSocket(daemon.socket)
            try raw.hello()
            try raw.send(["id": 2, "op": "ping", "args": ["delay_ms": 5000]])
            try raw.send(Array(FrameEncoder.encode(json: ["id": 3, "op": "ping"], body: [1, 2, 3]).dropLast(2)))
        }  // closed here, mid-frame, with a request in flight
        var stats = try await bystander.stats()
        for _ in 0..<100 where stats["connections"]?["open"]?.intValue != 1 {
            try await Task.sleep(for: .milliseconds(10))
            stats = try await bystander.stats()
        }
        #expect(stats["connections"]?["open"]?.intValue == 1)
        #expect(stats["requests"]?["in_flight"]?.intValue == 0, "the closed connection's request was cancelled")
        #expect(stats["errors"]?["cancelled"]?.intValue == 1)
        #expect(daemon.log.contains("closed mid-frame"))
        _ = try await bystander.ping()
    }

    @Test func inFlightAndConnectionLimits() async throws {
        let daemon = try Daemon(["--max-in-flight", "2", "--max-connections", "3"])
        defer { daemon.stop() }
        let raw = try RawSocket(daemon.socket)
        try raw.hello()
        try raw.send(["id": 10, "op": "ping", "args": ["delay_ms": 3000]])
        try raw.send(["id": 11, "op": "ping", "args": ["delay_ms": 3000]])
        try raw.send(["id": 12, "op": "ping"])
        guard case .error(12, let e)? = try raw.readReply() else {
            Issue.record("expected resource_exhausted for id 12")
            return
        }
        #expect(e.code == .resourceExhausted)
        // cancel is exempt from the limit, so a full connection can still free itself.
        try raw.send(["id": 13, "op": "cancel", "args": ["id": 10]])
        #expect(try raw.readReply() == .error(id: 10, WireError(.cancelled, "cancelled by the client")))
        #expect(try raw.readReply() == .result(id: 13, ["cancelled": true]))

        let second = try RawSocket(daemon.socket)
        try second.hello()
        let third = try RawSocket(daemon.socket)
        try third.hello()
        let fourth = try RawSocket(daemon.socket)
        guard case .error(0, let refused)? = try fourth.readReply() else {
            Issue.record("the fourth connection must be refused")
            return
        }
        #expect(refused.code == .resourceExhausted)
        #expect(try fourth.isClosedByPeer())
    }
}
}
