import Testing
@testable import FerryProtocol

@Suite struct RequestEnvelopeTests {
    func parse(_ s: String) throws(RequestEnvelope.Invalid) -> RequestEnvelope { try RequestEnvelope.parse(Array(s.utf8)) }

    @Test func fullEnvelope() throws {
        let e = try parse(#"{"id":9007199254740991,"op":"ping","args":{"delay_ms":5},"timeout_ms":100,"extra":[1]}"#)
        #expect(e == RequestEnvelope(id: RequestEnvelope.maxID, op: "ping", args: ["delay_ms": 5], timeoutMs: 100))
    }

    /// The direct writer a client sends with writes the bytes the tree would, for every optional part.
    @Test(arguments: [
        RequestEnvelope(id: 1, op: "ping"),
        RequestEnvelope(id: RequestEnvelope.maxID, op: "cache.get", args: ["key": "a\"b\u{1}é", "n": ["deep": [1, 2.5, nil, true]]], timeoutMs: 250),
        RequestEnvelope(id: 42, op: "cache.set", args: ["key": "k"], more: true),
        RequestEnvelope(id: 43, op: "o\\p", timeoutMs: RequestEnvelope.maxTimeoutMs, more: true),
    ])
    func directWriteMatchesTheTree(_ e: RequestEnvelope) throws {
        var out: [UInt8] = [9]
        e.write(to: &out)
        #expect(out == [9] + JSONWriter.encode(e.json))
        #expect(e.depth == e.json.depth)
        #expect(try RequestEnvelope.parse(Array(out.dropFirst()), maxNesting: 64) == e)
    }

    /// Each malformed envelope: the code is invalid_argument, and the reply id is the request's when it was readable.
    @Test(arguments: [
        (#"[1]"#, UInt64(0)), (#"{"op":"ping"}"#, 0), (#"{"id":"1","op":"ping"}"#, 0), (#"{"id":1.5,"op":"ping"}"#, 0),
        (#"{"id":0,"op":"ping"}"#, 0), (#"{"id":-3,"op":"ping"}"#, 0), (#"{"id":9007199254740992,"op":"ping"}"#, 0),
        (#"{"id":4}"#, 4), (#"{"id":4,"op":7}"#, 4), (#"{"id":4,"op":"ping","args":[]}"#, 4),
        (#"{"id":4,"op":"ping","timeout_ms":0}"#, 4), (#"{"id":4,"op":"ping","timeout_ms":"5"}"#, 4),
        (#"{"id":4,"op":"ping","timeout_ms":2147483648}"#, 4), (#"not json"#, 0),
    ])
    func invalid(_ text: String, _ id: UInt64) {
        do {
            _ = try parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.id == id)
            #expect(error.error.code == .invalidArgument)
        }
    }

    @Test func replyEnvelopes() throws {
        let r = ReplyEnvelope.parse(try JSONParser.parse(Array(#"{"id":3,"final":true,"error":{"code":"weird_new_code","message":"m"}}"#.utf8)))
        guard case .error(3, let e)? = r else { Issue.record("not an error reply"); return }
        #expect(e.code == .internal && e.codeName == "weird_new_code", "unknown codes read as internal, name kept")
        #expect(ReplyEnvelope.parse(["id": 1, "final": false]) == nil, "an event needs a name")
        #expect(ReplyEnvelope.parse(["id": 1, "final": true]) == nil, "a final frame needs result or error")
        #expect(ReplyEnvelope.parse(["id": 1, "final": false, "event": "tick"]) == .event(id: 1, name: "tick", data: JSONObject()))
    }

    /// The reply reader's fast path (a result in the server's order) and its general path read every reply alike:
    /// the same envelope, or both nil.
    @Test(arguments: [
        #"{"id":7,"final":true,"result":{"pong":true}}"#, #"{"id":0,"final":true,"result":{}}"#,
        #"{"id":9007199254740991,"final":true,"result":{"a":[1,{"b":null}],"s":"x\"}"}}"#,
        #"{"id":9007199254740992,"final":true,"result":{}}"#, #"{"id":12345678901234567,"final":true,"result":{}}"#,
        #"{"id":01,"final":true,"result":{}}"#, #"{"id":-1,"final":true,"result":{}}"#, #"{"id":,"final":true,"result":{}}"#,
        #"{"id":7,"final":true,"result":{},"id":8}"#, #"{"id":7,"final":true,"result":{}} "#, #"{"id":7,"final":true,"result":{} }"#,
        #"{"id":7,"final":true,"result":[]}"#, #"{"id":7,"final":true,"result":{"a":1}}}"#, #"{"id":7,"final":true,"result":{"a":1}"#,
        #"{"id":7,"final":true,"result":{}},{"x":1}"#, #"{"id":7,"final":true,"result":{"a":"\ud800"}}"#,
        #"{"id":7,"final":true,"result":{"a":1},"final":false}"#, #"{"final":true,"id":7,"result":{}}"#,
        #"{"id":7,"final":true,"error":{"code":"not_found","message":"m"}}"#, #"{"id":7,"final":false,"event":"chunk"}"#,
        #"{"id":7,"final":true,"result":{"d":[[[[[[]]]]]]}}"#, #"{"id":7,"final":true,"result":{"d":[[[[[[[]]]]]]]}}"#,
    ])
    func replyFastPathMatchesTheGeneralPath(_ text: String) {
        let bytes = Array(text.utf8)
        let general = (try? JSONParser.parse(bytes, maxDepth: 8)).flatMap(ReplyEnvelope.parse)
        #expect(ReplyEnvelope.parse(bytes, maxDepth: 8) == general)
        for cut in [1, bytes.count / 2, bytes.count - 1] {
            let part = Array(bytes.prefix(cut))
            #expect(ReplyEnvelope.parse(part, maxDepth: 8) == (try? JSONParser.parse(part, maxDepth: 8)).flatMap(ReplyEnvelope.parse))
        }
    }

    /// `resultInServerOrder` finds the id and the result's bytes of a reply in the server's order only, and parses
    /// nothing: what a hand check compares is exactly the result object.
    @Test func resultInServerOrderFindsTheResultsBytes() {
        func found(_ text: String) -> (UInt64, String)? {
            Array(text.utf8).withUnsafeBytes { b in
                ReplyEnvelope.resultInServerOrder(b).map { ($0.id, String(decoding: UnsafeRawBufferPointer(rebasing: b[$0.result]), as: UTF8.self)) }
            }
        }
        #expect(found(#"{"id":7,"final":true,"result":{"pong":true}}"#).map { "\($0.0) \($0.1)" } == #"7 {"pong":true}"#)
        #expect(Array(#"{"id":7,"final":true,"result":{"pong":true}}"#.utf8).withUnsafeBytes { ReplyEnvelope.resultInServerOrder($0)?.result } == 30..<43)
        #expect(found(#"{"id":1234567,"final":true,"result":{"size":3,"source":"memory"}}"#).map { "\($0.0) \($0.1)" }
                == #"1234567 {"size":3,"source":"memory"}"#)
        for other in [#"{"id":7,"final":true,"result":[]}"#, #"{"id":01,"final":true,"result":{}}"#, #"{"final":true,"id":7,"result":{}}"#,
                      #"{"id":7,"final":true,"error":{"code":"not_found","message":"m"}}"#, #"{"id":7,"final":false,"event":"chunk"}"#,
                      #"{"id":7,"final":true,"result":{} "#, #"{"id":9007199254740992,"final":true,"result":{}}"#] {
            #expect(found(other) == nil, "\(other)")
        }
    }

    @Test func errorCodesAreTheDocumentedSet() {
        #expect(ErrorCode.allCases.map(\.rawValue) == [
            "invalid_argument", "failed_precondition", "not_found", "already_exists", "deadline_exceeded", "cancelled",
            "unavailable", "resource_exhausted", "permission_denied", "unimplemented", "internal", "protocol_error",
            "invalid_image",
        ])
    }
}

@Suite struct SocketPathTests {
    @Test func resolutionOrder() {
        #expect(SocketPath.resolve(explicit: "/x.sock", environment: ["FERRY_SOCKET": "/y.sock"], uid: 5) == "/x.sock")
        #expect(SocketPath.resolve(environment: ["FERRY_SOCKET": "/y.sock", "XDG_RUNTIME_DIR": "/run/u"], uid: 5) == "/y.sock")
        #expect(SocketPath.resolve(environment: ["FERRY_SOCKET": "", "XDG_RUNTIME_DIR": "/run/u"], uid: 5) == "/run/u/ferry/ferryd.sock")
        #expect(SocketPath.resolve(environment: ["XDG_RUNTIME_DIR": ""], uid: 5) == "/tmp/ferry-5/ferryd.sock")
        #expect(SocketPath.isDefault(explicit: nil, environment: { _ in nil }))
        #expect(!SocketPath.isDefault(explicit: nil, environment: { $0 == "FERRY_SOCKET" ? "/a" : nil }))
    }

    @Test func lengthLimit() {
        #expect(SocketPath.problem(with: "/" + String(repeating: "a", count: 106)) == nil)
        #expect(SocketPath.problem(with: "/" + String(repeating: "a", count: 107))?.contains("at most 107") == true)
        #expect(SocketPath.problem(with: "") != nil)
    }

    @Test func cacheDirectory() {
        #expect(SocketPath.defaultCacheDirectory(environment: { ["XDG_CACHE_HOME": "/c", "HOME": "/h"][$0] }) == "/c/ferry")
        #expect(SocketPath.defaultCacheDirectory(environment: { ["HOME": "/h"][$0] }) == "/h/.cache/ferry")
    }
}
