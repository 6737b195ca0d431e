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
        var s = s
        s.withUTF8 { bytes in
            var runStart = 0
            for (k, b) in bytes.enumerated() where b < 0x20 || b == 0x22 || b == 0x5C {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<k]))
                appendEscape(b, to: &out)
                runStart = k + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func appendEscape(_ b: UInt8, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        switch b {
        case 0x22: out.append(0x22)
        case 0x5C: out.append(0x5C)
        case 0x08: out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(UInt8(ascii: "f"))
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        default:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 0xF)]])
        }
    }
}
