import Testing
import FerryBytes
@testable import FerryProtocol

@Suite struct JSONParserTests {
    func parse(_ s: String, depth: Int = 32) throws -> JSONValue { try JSONParser.parse(Array(s.utf8), maxDepth: depth) }

    @Test func scalarsAndContainers() throws {
        #expect(try parse("null") == .null)
        #expect(try parse(" true ") == .bool(true))
        #expect(try parse("-12") == .int(-12))
        #expect(try parse("1.5e2") == .double(150))
        #expect(try parse("9223372036854775807") == .int(Int64.max))
        #expect(try parse("-9223372036854775808") == .int(Int64.min))
        #expect(try parse("18446744073709551616") == .double(18446744073709551616))
        #expect(try parse(#"[1,"a",{"b":[]}]"#) == [1, "a", ["b": []]])
        let o = try parse(#"{"z":1,"a":2}"#)
        #expect(o.objectValue?.keys == ["z", "a"], "order is kept")
    }

    @Test func stringEscapes() throws {
        #expect(try parse(#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00""#) == .string("a\"b\\c/d\n\té😀"))
        #expect(try parse(#""plain é""#) == .string("plain é"))
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "1e", "tru", "nul", "\"abc", "\"\\x\"", "\"\\ud800\"",
        "\"\\udc00\"", "\"a\u{01}b\"", "{\"a\" 1}", "{1:2}", "[1 2]", "1 2", "+1", ".5", "NaN", "1e999",
    ])
    func rejectsInvalid(_ text: String) {
        #expect(throws: JSONParseError.self) { try parse(text) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xC0, 0xAF, 0x22]) }  // overlong "/"
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }  // surrogate
    }

    @Test func duplicateKeysAreRefusedInSmallAndLargeObjects() {
        #expect(throws: JSONParseError.self) { try parse(#"{"a":1,"a":2}"#) }
        let many = (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect(throws: Never.self) { try parse("{\(many)}") }
        #expect(throws: JSONParseError.self) { try parse("{\(many),\"k3\":0}") }
    }

    @Test func keysCompareByBytesNotByCanonicalEquivalence() throws {
        let v = try parse("{\"\u{e9}\":1,\"e\u{301}\":2}")
        #expect(v.objectValue?.count == 2)
        #expect(v["\u{e9}"] == 1 && v["e\u{301}"] == 2)
    }

    @Test func intValueNeverTraps() throws {
        #expect(JSONValue.double(9.25e18).intValue == nil)
        #expect(JSONValue.double(-9.3e18).intValue == nil)
        #expect(JSONValue.double(2.0).intValue == 2)
        #expect(JSONValue.double(2.5).intValue == nil)
        #expect(try parse("[[1],{\"a\":[]}]").depth == 3)
    }

    @Test func nestingCap() throws {
        let ok = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        let deep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        #expect(throws: Never.self) { try parse(ok) }
        #expect(throws: JSONParseError.self) { try parse(deep) }
        // A hostile depth fails fast instead of exhausting the stack.
        let hostile = String(repeating: "[", count: 100_000)
        #expect(throws: JSONParseError.self) { try parse(hostile) }
    }
}

@Suite struct JSONWriterTests {
    func text(_ v: JSONValue) -> String { String(decoding: JSONWriter.encode(v), as: UTF8.self) }

    @Test func compactForm() {
        #expect(text(["id": 1, "ok": true, "n": nil, "a": [1, -2, "x"]]) == #"{"id":1,"ok":true,"n":null,"a":[1,-2,"x"]}"#)
        #expect(text(.int(Int64.min)) == "-9223372036854775808")
        #expect(text(.int(1234567890)) == "1234567890")
        #expect(text(.double(1.5)) == "1.5")
    }

    @Test func escapesLikePython() {
        #expect(text(.string("q\"b\\ \n\t\r\u{08}\u{0C}\u{01}\u{1F} /é✓")) == #""q\"b\\ \n\t\r\b\f\u0001\u001f /é✓""#)
    }

    /// Strings written eight bytes at a time are written as byte by byte: every byte that needs an escape, at every
    /// position of strings of every length up to 40, among ASCII and multi-byte characters.
    @Test func wordAtATimeEscapingMatchesByteByByte() throws {
        func reference(_ s: String) -> [UInt8] {
            var out: [UInt8] = [UInt8(ascii: "\"")]
            for b in s.utf8 {
                switch b {
                case 0x22: out += Array(#"\""#.utf8)
                case 0x5C: out += Array(#"\\"#.utf8)
                case 0x08: out += Array(#"\b"#.utf8)
                case 0x0C: out += Array(#"\f"#.utf8)
                case 0x0A: out += Array(#"\n"#.utf8)
                case 0x0D: out += Array(#"\r"#.utf8)
                case 0x09: out += Array(#"\t"#.utf8)
                case ..<0x20: out += Array(String(format: "\\u%04x", b).utf8)
                default: out.append(b)
                }
            }
            return out + [UInt8(ascii: "\"")]
        }
        let fillers = ["a", "é", "✓", "~", "\u{7F}", " "]
        for special in (0..<0x20).map({ String(UnicodeScalar(UInt8($0))) }) + ["\"", "\\", "!", "#", "[", "]", "\u{80}", "ÿ"] {
            for length in 0...40 {
                for position in Swift.stride(from: 0, to: max(1, length), by: 3) {
                    let filler = fillers[(length + position) % fillers.count]
                    var chars = Array(repeating: filler, count: length)
                    if length > 0 { chars[position] = special }
                    let s = chars.joined()
                    var out: [UInt8] = []
                    JSONWriter.writeString(s, to: &out)
                    #expect(out == reference(s), "\(s.debugDescription)")
                    #expect(try JSONParser.parse(out) == .string(s))
                    // The cursor's writer (the access log's) writes the same bytes.
                    let viaCursor = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 6 * s.utf8.count + 2) { room in
                        var c = ByteCursor(room)
                        JSONWriter.writeString(s, to: &c)
                        return c.overflowed ? [] : Array(c.written)
                    }
                    #expect(viaCursor == out, "\(s.debugDescription)")
                }
            }
        }
    }

    @Test func roundTrip() throws {
        let v: JSONValue = ["s": "a\u{0}b", "d": 0.25, "nested": ["x": [[], [:]]], "neg": -7]
        #expect(try JSONParser.parse(JSONWriter.encode(v)) == v)
    }
}
