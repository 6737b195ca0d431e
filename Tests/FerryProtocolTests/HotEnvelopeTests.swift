import Testing
@testable import FerryProtocol

/// The hot scan reads a strict subset of what `RequestEnvelope.parse` reads, and reads it the same way: every
/// envelope it accepts parses to the same id, op and arguments; everything else is left to the general path.
@Suite struct HotEnvelopeTests {
    static func scan(_ text: String) -> HotEnvelope? { Array(text.utf8).withUnsafeBytes { HotEnvelope.scan($0) } }

    static func text(_ text: String, _ r: Range<Int>?) -> String? {
        r.map { String(decoding: Array(text.utf8)[$0], as: UTF8.self) }
    }

    @Test func thePlainShapesOfTheHotOperations() throws {
        let get = #"{"id":7,"op":"cache.get","args":{"key":"user:1","namespace":"app"}}"#
        let e = try #require(Self.scan(get))
        #expect(e.id == 7 && Self.text(get, e.op) == "cache.get" && Self.text(get, e.key) == "user:1")
        #expect(Self.text(get, e.namespace) == "app" && e.ttlMs == nil && e.hasArgs)
        let set = " {\n\"op\" : \"cache.set\", \"args\":{ \"ttl_ms\": 60000 ,\"key\":\"k\"}, \"id\":9007 } "
        let s = try #require(Self.scan(set))
        #expect(s.id == 9007 && s.ttlMs == 60000 && Self.text(set, s.key) == "k" && s.namespace == nil)
        let ping = try #require(Self.scan(#"{"id":1,"op":"ping"}"#))
        #expect(!ping.hasArgs)
        #expect(Self.scan(#"{"id":1,"op":"ping","args":{}}"#)?.hasArgs == false)
    }

    @Test func anythingElseIsTheGeneralPaths() {
        let refused = [
            #"{"id":1,"op":"cache.get","args":{"key":"a"},"timeout_ms":5}"#,   // another member
            #"{"id":1,"op":"cache.get","args":{"key":"a"},"more":true}"#,
            #"{"id":1,"op":"cache.get","args":{"key":"a","other":1}}"#,         // another argument
            #"{"id":1,"op":"cache.get","args":{"key":"a\"b"}}"#,               // an escape
            "{\"id\":1,\"op\":\"cache.get\",\"args\":{\"key\":\"caf\u{e9}\"}}",   // not ASCII
            #"{"id":1,"op":"cache.get","args":{"key":"a","key":"b"}}"#,         // duplicates
            #"{"id":1,"id":2,"op":"ping"}"#,
            #"{"id":01,"op":"ping"}"#, #"{"id":1.0,"op":"ping"}"#, #"{"id":-1,"op":"ping"}"#, #"{"id":1e2,"op":"ping"}"#,
            #"{"id":0,"op":"ping"}"#, #"{"id":1234567890123456,"op":"ping"}"#,  // out of range, or long: general
            #"{"id":"1","op":"ping"}"#, #"{"op":"ping"}"#, #"{"id":1}"#, #"{"id":1,"op":"ping"} x"#,
            #"{"id":1,"op":"ping",}"#, #"{"id":1,"op":"ping""#, #"[1]"#, "",
            #"{"id":1,"op":"cache.set","args":{"ttl_ms":null,"key":"a"}}"#,
            #"{"id":1,"op":"cache.set","args":{"ttl_ms":-5,"key":"a"}}"#,
            #"{"id":1,"op":"cache.get","args":{"key":1}}"#,
            #"{"id":1,"op":"cache.get","args":[]}"#,
            #"{"id":1,"op":"cache.get","args":{"key":"a","body_fd":1}}"#,     // body_fd: a boolean, else general
            #"{"id":1,"op":"cache.get","args":{"key":"a","body_fd":"true"}}"#,
            #"{"id":1,"op":"cache.get","args":{"key":"a","body_fd":null}}"#,
            #"{"id":1,"op":"cache.get","args":{"key":"a","body_fd":truex}}"#,
            #"{"id":1,"op":"cache.get","args":{"key":"a","body_fd":tru}}"#,
            #"{"id":1,"op":"cache.get","args":{"key":"a","body_fd":true,"body_fd":false}}"#,
        ]
        for text in refused { #expect(Self.scan(text) == nil, "\(text)") }
    }

    /// Strings are scanned eight bytes at a time: every byte value at every position of a 20-byte key is taken or
    /// refused exactly as the byte-by-byte rule says (printable ASCII, no quote or backslash).
    @Test func everyByteAtEveryPositionOfALongKey() {
        for position in 0..<20 {
            for byte in 0...255 {
                var key = [UInt8](repeating: UInt8(ascii: "k"), count: 20)
                key[position] = UInt8(byte)
                let json = Array(#"{"id":1,"op":"cache.get","args":{"key":""#.utf8) + key + Array(#""}}"#.utf8)
                let hot = json.withUnsafeBytes { HotEnvelope.scan($0) }
                let plain = byte >= 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x5C
                #expect((hot != nil) == plain, "byte \(byte) at \(position)")
                if let hot { #expect(hot.key.map { Array(json[$0]) } == key) }
            }
        }
    }

    /// Every accepted envelope, in many spellings, parses the same on the general path.
    @Test func whatTheScanAcceptsTheParserReadsTheSame() throws {
        let spaces = ["", " ", "\n", "\t ", "\r\n"]
        var checked = 0
        for (n, space) in spaces.enumerated() {
            for args in ["", #","args":{}"#, #","args":{"key":"k\#(n)"}"#, #","args":{"namespace":"n.s","key":"k","ttl_ms":\#(n + 1)}"#,
                         ",\"args\":{\"key\":\"k\",\"body_fd\":\(space)\(n % 2 == 0)\(space)}",
                         #","args":{"url":"http://a.test/p?q=\#(n)"}"#] {
                for text in ["{\(space)\"id\"\(space):\(space)\(n + 1)\(space),\"op\":\"cache.get\"\(args)\(space)}",
                             "{\"op\":\(space)\"ping\"\(args),\(space)\"id\":\(n + 10)}\(space)"] {
                    let bytes = Array(text.utf8)
                    let hot = try #require(Self.scan(text), "\(text)")
                    let parsed = try RequestEnvelope.parse(bytes)
                    #expect(parsed.id == hot.id && parsed.op == Self.text(text, hot.op) && parsed.timeoutMs == nil && !parsed.more)
                    #expect(parsed.args["key"]?.stringValue == Self.text(text, hot.key))
                    #expect(parsed.args["namespace"]?.stringValue == Self.text(text, hot.namespace))
                    #expect(parsed.args["url"]?.stringValue == Self.text(text, hot.url))
                    #expect(parsed.args["ttl_ms"]?.intValue == hot.ttlMs && parsed.args.isEmpty == !hot.hasArgs)
                    #expect(parsed.args["body_fd"]?.boolValue == hot.bodyFD)
                    let rebuilt = bytes.withUnsafeBytes { hot.requestEnvelope($0) }
                    #expect(rebuilt.id == parsed.id && rebuilt.op == parsed.op && rebuilt.timeoutMs == nil && !rebuilt.more)
                    #expect(Set(rebuilt.args.keys) == Set(parsed.args.keys) && rebuilt.args.keys.allSatisfy { rebuilt.args[$0] == parsed.args[$0] })
                    checked += 1
                }
            }
        }
        #expect(checked == 60)
    }

    /// The canonical spelling's reader agrees with the general scan wherever it accepts, accepts what clients
    /// write, and hands everything else to the general scan (which decides it as before).
    @Test func theCanonicalSpellingIsReadAsTheGeneralScanReadsIt() {
        var inputs: [String] = []
        for id in ["1", "7", "42", "123456789012345", "9007199254740991", "0", "01", "1234567890123456", "-1", "1.5"] {
            for op in ["ping", "cache.get", "cache.set", "a\\b", "caf\u{e9}", ""] {
                for args in ["", #","args":{"key":"k"}"#, #","args":{"key":"key:000000001234","namespace":"app"}"#,
                             #","args":{"key":"k","namespace":"n","ttl_ms":5}"#, #","args":{"namespace":"n","key":"k"}"#,
                             #","args":{}"#, #","args":{"key":"a\"b"}"#, #","args":{"key":""}"#, #","args":{"key":"k"} "#,
                             #","args":{"key":"k","key":"j"}"#, #","args":{"key":"k"},"timeout_ms":5"#, #","args":{"key":1}"#] {
                    inputs.append("{\"id\":\(id),\"op\":\"\(op)\"\(args)}")
                    inputs.append("{\"id\":\(id),\"op\":\"\(op)\"\(args)} ")
                    inputs.append("{\"id\": \(id),\"op\":\"\(op)\"\(args)}")
                    inputs.append("{\"id\":\(id),\"op\":\"\(op)\"\(args)")
                }
            }
        }
        var canonical = 0
        for text in inputs {
            let bytes = Array(text.utf8)
            bytes.withUnsafeBytes { b in
                var reader = HotEnvelope.Scanner(b: b)
                let fast = reader.canonical()
                let general = HotEnvelope.scanGeneral(b)
                if let fast {
                    canonical += 1
                    #expect(fast == general, "\(text)")
                }
                #expect(HotEnvelope.scan(b) == general, "\(text)")
            }
        }
        // What the clients write is read canonically: ids in range, plain ops, and `key` (+ `namespace`) or no args.
        #expect(canonical >= 4 * 4 * 3, "\(canonical) of \(inputs.count)")
        let client = Array(#"{"id":12,"op":"cache.get","args":{"key":"user:1","namespace":"app"}}"#.utf8)
        #expect(client.withUnsafeBytes { b -> Bool in var r = HotEnvelope.Scanner(b: b); return r.canonical() != nil })
    }
}
