import Testing
@testable import FerryProtocol

/// The id of an envelope that did not parse, read by the tolerant scan (PROTOCOL.md §3).
@Suite struct EnvelopeIDTests {
    static func id(_ json: String) -> UInt64? { EnvelopeID.salvage(Array(json.utf8)) }

    @Test func theTopLevelIdOfJSONThatIsRefusedForSomethingElse() {
        #expect(Self.id(#"{"id":7,"op":"ping","args":{"a":1,"a":2}}"#) == 7, "a duplicate key deeper down")
        #expect(Self.id(#"{"op":"ping","args":{"s":"\ud800"},"id":10}"#) == 10, "a lone surrogate before the id")
        #expect(Self.id(#"{ "id" : 42 , "op":"ping", "args":[[[[["#) == 42, "cut off, unbalanced")
        #expect(EnvelopeID.salvage(Array(#"{"id":3,"op":"p"#.utf8) + [0xFF] + Array(#""}"#.utf8)) == 3, "bad UTF-8")
        #expect(Self.id(#"{"id":9007199254740991}"#) == 9_007_199_254_740_991, "2^53 - 1")
    }

    @Test func anIdThatIsNotAPlainTopLevelIntegerIsNotGuessed() {
        #expect(Self.id(#"{"args":{"id":7},"op":"x"}"#) == nil, "nested: not the envelope's")
        #expect(Self.id(#"{"op":"id","x":"id"}"#) == nil, "\"id\" as a value")
        #expect(Self.id(#"{"s":"\"id\":5","op":"x"}"#) == nil, "inside a string, behind an escaped quote")
        for bad in [#"{"id":"7"}"#, #"{"id":-7}"#, #"{"id":7.0}"#, #"{"id":7e2}"#, #"{"id":07}"#, #"{"id":0}"#,
                    #"{"id":9007199254740992}"#, #"{"id":123456789012345678901}"#, #"{"id":}"#] {
            #expect(Self.id(bad) == nil, "\(bad)")
        }
        #expect(Self.id(#"{"id":1,"id":2}"#) == nil, "two ids: neither is trusted")
        #expect(Self.id(#"{"id":4,"op":"p","id":4}"#) == 4, "the same id twice")
        #expect(Self.id("") == nil && Self.id("{") == nil && Self.id(#"{"id"#) == nil)
    }

    /// Null is absent, in the envelope and every operation's arguments, except where it is a value.
    @Test func nullMembersAreAbsent() throws {
        let e = try RequestEnvelope.parse(Array(#"{"id":5,"op":"ping","args":{"delay_ms":null,"x":1},"timeout_ms":null,"more":null}"#.utf8))
        #expect(e.args == ["x": 1] && e.timeoutMs == nil && !e.more)
        #expect(try RequestEnvelope.parse(Array(#"{"id":5,"op":"ping","args":null}"#.utf8)).args.isEmpty)
        let touch = try RequestEnvelope.parse(Array(#"{"id":6,"op":"cache.touch","args":{"key":"k","ttl_ms":null}}"#.utf8))
        #expect(touch.args["ttl_ms"] == .null, "cache.touch: null means no expiry")
        #expect {
            try RequestEnvelope.parse(Array(#"{"id":8,"op":"ping","args":{"a":1,"a":2}}"#.utf8))
        } throws: { error in
            (error as? RequestEnvelope.Invalid).map { $0.id == 8 && $0.error.code == .invalidArgument } ?? false
        }
    }
}
