import Testing
@testable import FerryProtocol

@Suite struct RequestEnvelopeTests {
    func parse(_ s: String) throws(RequestEnvelope.Invalid) -> RequestEnvelope { try RequestEnvelope.parse(Array(s.utf8)) }

    @Test func fullEnvelope() throws {
        let e = try parse(#"{"id":9007199254740991,"op":"ping","args":{"delay_ms":5},"timeout_ms":100,"extra":[1]}"#)
        #expect(e == RequestEnvelope(id: RequestEnvelope.maxID, op: "ping", args: ["delay_ms": 5], timeoutMs: 100))
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
