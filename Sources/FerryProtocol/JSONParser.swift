/// Why a JSON text was refused, with the byte offset where the parser stopped.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 parser over raw bytes, written by hand because the envelope codec decides Ferry's throughput
/// (Codable costs ~4 µs a request, this ~0.2 µs).
///
/// Strict means: UTF-8 is validated, nesting is capped (`maxDepth`), duplicate object keys are refused, and nothing
/// but whitespace may follow the value.
///
/// ```swift
/// let v = try JSONParser.parse(Array(#"{"id":1}"#.utf8))
/// ```
public struct JSONParser {
    private let bytes: UnsafeRawBufferPointer
    private var i = 0
    private let maxDepth: Int
    private var depth = 0

    private init(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Parses one JSON value filling `bytes` (surrounding whitespace allowed).
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = 32) throws(JSONParseError) -> JSONValue {
        try validateUTF8(bytes)
        var p = JSONParser(bytes, maxDepth: maxDepth)
        p.skipWhitespace()
        let value = try p.parseValue()
        p.skipWhitespace()
        if p.i != bytes.count { throw p.error("unexpected bytes after the JSON value") }
        return value
    }

    public static func parse(_ bytes: [UInt8], maxDepth: Int = 32) throws(JSONParseError) -> JSONValue {
        do {
            return try bytes.withUnsafeBytes { try parse($0, maxDepth: maxDepth) }
        } catch let e as JSONParseError {
            throw e
        } catch {
            throw JSONParseError(message: "\(error)", offset: 0)
        }
    }

    /// Checks the whole text once so that string decoding later can skip validation. ASCII is the fast path.
    private static func validateUTF8(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) {
        var asciiOnly = true
        for b in bytes where b >= 0x80 {
            asciiOnly = false
            break
        }
        if asciiOnly { return }
        if String(validating: bytes, as: UTF8.self) == nil {
            throw JSONParseError(message: "the text is not valid UTF-8", offset: 0)
        }
    }

    private func error(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: i) }

    private mutating func skipWhitespace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard i < bytes.count else { throw error("unexpected end of JSON") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw error("unexpected end of JSON") }
        let w = word.utf8Start
        for k in 0..<n where bytes[i + k] != w[k] { throw error("invalid literal") }
        i += n
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > maxDepth { throw error("nesting deeper than \(maxDepth)") }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        i += 1
        var members: [(key: String, value: JSONValue)] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            depth -= 1
            return .object(JSONObject(members))
        }
        var seen: Set<[UInt8]>? = nil
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let keyOffset = i
            let key = try parseString()
            // Small objects: a linear scan beats hashing; large ones switch to a set so the check stays linear.
            if members.count < 16 {
                for m in members where JSONObject.sameKey(m.key, key) { throw duplicateKey(key, at: keyOffset) }
            } else {
                if seen == nil { seen = Set(members.map { Array($0.key.utf8) }) }
                if !seen!.insert(Array(key.utf8)).inserted { throw duplicateKey(key, at: keyOffset) }
            }
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
            i += 1
            skipWhitespace()
            let value = try parseValue()
            members.append((key, value))
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of JSON") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; break }
            throw error("expected ',' or '}'")
        }
        depth -= 1
        return .object(JSONObject(members))
    }

    /// The key is quoted in the message, cut short: error replies must stay small whatever the input.
    private func duplicateKey(_ key: String, at offset: Int) -> JSONParseError {
        JSONParseError(message: "duplicate key \"\(key.truncatedForMessages)\"", offset: offset)
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        i += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            depth -= 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of JSON") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; break }
            throw error("expected ',' or ']'")
        }
        depth -= 1
        return .array(items)
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        i += 1  // opening quote
        let start = i
        // Fast path: no escapes, so the string is a slice of the (already validated) input.
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                i += 1
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw error("control character in string") }
            i += 1
        }
        var out = Array(bytes[start..<i])
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case UInt8(ascii: "\""):
                i += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                i += 1
                guard i < bytes.count else { throw error("unexpected end of JSON") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(&out)
                default: throw error("invalid escape")
                }
            default:
                if b < 0x20 { throw error("control character in string") }
                out.append(b)
                i += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func readHex4() throws(JSONParseError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("unexpected end of JSON") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }

    private mutating func appendUnicodeEscape(_ out: inout [UInt8]) throws(JSONParseError) {
        var scalar = try readHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            // A high surrogate must be followed by an escaped low surrogate.
            guard i + 2 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                throw error("lone surrogate in \\u escape")
            }
            i += 2
            let low = try readHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid surrogate pair") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw error("lone surrogate in \\u escape")
        }
        guard let u = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
        out.append(contentsOf: UTF8.encode(u)!)
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = i
        var negative = false
        if bytes[i] == UInt8(ascii: "-") { negative = true; i += 1 }
        guard i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) else {
            throw error("invalid number")
        }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { throw error("leading zero in number") }
        }
        var magnitude: UInt64 = 0
        var overflow = false
        var k = negative ? start + 1 : start
        while k < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[k]) {
            let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (m2, o2) = m1.addingReportingOverflow(UInt64(bytes[k] - UInt8(ascii: "0")))
            overflow = overflow || o1 || o2
            magnitude = m2
            k += 1
        }
        i = k
        var isInteger = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            try skipDigits()
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            try skipDigits()
        }
        if isInteger && !overflow {
            if negative, magnitude <= UInt64(Int64.max) + 1 {
                return .int(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
            }
            if !negative, magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { throw JSONParseError(message: "number out of range", offset: start) }
        return .double(d)
    }

    private mutating func skipDigits() throws(JSONParseError) {
        let s = i
        while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
        if i == s { throw error("invalid number") }
    }
}
