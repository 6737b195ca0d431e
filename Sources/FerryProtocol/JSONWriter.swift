import FerryBytes

/// Writes JSON in the compact form PROTOCOL.md section 10 fixes (Python's
/// `json.dumps(v, separators=(",", ":"), ensure_ascii=False)`), appending to a byte array so replies are built in
/// place without intermediate strings.
///
/// ```swift
/// var out: [UInt8] = []
/// JSONWriter.write(["pong": true], to: &out)   // {"pong":true}
/// ```
public enum JSONWriter {
    public static func write(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: appendASCII("null", to: &out)
        case .bool(let b): appendASCII(b ? "true" : "false", to: &out)
        case .int(let n): writeInt(n, to: &out)
        case .double(let d): writeDouble(d, to: &out)
        case .string(let s): writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (k, item) in items.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                write(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o): write(o, to: &out)
        }
    }

    public static func write(_ object: JSONObject, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (k, m) in object.members.enumerated() {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            writeString(m.key, to: &out)
            out.append(UInt8(ascii: ":"))
            write(m.value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// The encoded bytes of `value`.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        write(value, to: &out)
        return out
    }

    public static func appendASCII(_ s: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    public static func writeInt(_ n: Int64, to out: inout [UInt8]) {
        if n >= 0 && n < 10 {
            out.append(UInt8(ascii: "0") + UInt8(n))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var m = n.magnitude
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            let base = d.baseAddress!.assumingMemoryBound(to: UInt8.self)
            repeat {
                base[19 - count] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
                count += 1
            } while m > 0
            if n < 0 { out.append(UInt8(ascii: "-")) }
            // A typed buffer: appending a slice of raw bytes took the generic path, byte by byte (345 instructions
            // for a seven-digit id, callgrind).
            out.append(contentsOf: UnsafeBufferPointer(start: base + (20 - count), count: count))
        }
    }

    /// Doubles as Python writes them: integral values keep a ".0", others use the shortest round-trip form.
    public static func writeDouble(_ d: Double, to out: inout [UInt8]) {
        guard d.isFinite else {
            appendASCII("null", to: &out)
            return
        }
        out.append(contentsOf: d.description.utf8)
    }

    public static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        if s.utf8.withContiguousStorageIfAvailable({ writeEscaped($0, to: &out) }) == nil {
            var s = s
            s.withUTF8 { writeEscaped($0, to: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The contents of a string: runs that need no escape appended whole, found eight bytes at a time (a reply's
    /// header values are mostly such runs: byte by byte they took 30 instructions a byte, callgrind).
    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        guard let base = bytes.baseAddress else { return }
        let n = bytes.count
        var runStart = 0, k = 0
        while k < n {
            if n - k >= 8 && !wordNeedsEscape(UnsafeRawPointer(base + k).loadUnaligned(as: UInt64.self)) {
                k += 8
                continue
            }
            let b = base[k]
            if b < 0x20 || b == 0x22 || b == 0x5C {
                out.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: k - runStart))
                appendEscape(b, to: &out)
                runStart = k + 1
            }
            k += 1
        }
        out.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: n - runStart))
    }

    /// Whether any of the eight bytes is a control character, `"` or `\` (exact: the usual zero-byte tests).
    @inline(__always)
    static func wordNeedsEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let below20 = (w &- ones &* 0x20) & ~w & highs
        let quote = w ^ (ones &* 0x22), backslash = w ^ (ones &* 0x5C)
        let hasQuote = (quote &- ones) & ~quote & highs
        let hasBackslash = (backslash &- ones) & ~backslash & highs
        return (below20 | hasQuote | hasBackslash) != 0
    }

    private static func appendEscape(_ b: UInt8, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        if let letter = shortEscape(b) {
            out.append(letter)
        } else {
            out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigit(b >> 4), hexDigit(b & 0xF)])
        }
    }

    /// What follows the backslash of a two-byte escape (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`), or nil for a
    /// control character written `\u00XX`.
    static func shortEscape(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x22, 0x5C: return b
        case 0x08: return UInt8(ascii: "b")
        case 0x0C: return UInt8(ascii: "f")
        case 0x0A: return UInt8(ascii: "n")
        case 0x0D: return UInt8(ascii: "r")
        case 0x09: return UInt8(ascii: "t")
        default: return nil
        }
    }

    static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 48 + v : UInt8(ascii: "a") + v - 10 }

    /// A string as `writeString(_:to:)` writes it, through a cursor (the access log's lines, `AccessLog`): the same
    /// bytes (`JSONTests`).
    public static func writeString(_ s: String, to c: inout ByteCursor) {
        c.byte(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            var run = 0
            for (k, b) in bytes.enumerated() where b < 0x20 || b == 0x22 || b == 0x5C {
                c.bytes(UnsafeRawBufferPointer(rebasing: raw[run..<k]))
                c.byte(UInt8(ascii: "\\"))
                if let letter = shortEscape(b) {
                    c.byte(letter)
                } else {
                    c.ascii("u00")
                    c.byte(hexDigit(b >> 4))
                    c.byte(hexDigit(b & 0xF))
                }
                run = k + 1
            }
            c.bytes(UnsafeRawBufferPointer(rebasing: raw[run...]))
        }
        c.byte(UInt8(ascii: "\""))
    }
}
