/// The `id` of a request envelope that did not parse (bad UTF-8, bad JSON, nesting over the limit, a duplicate
/// key), read by a tolerant scan of its bytes, so that the error can name the request it answers instead of id 0 —
/// a client waiting on that id would otherwise wait for ever (PROTOCOL.md §3).
///
/// The scan follows strings (and their escapes) and nesting without judging anything else: the value is taken only
/// from a key `"id"` of the top-level object, written as a plain integer from 1 to 2^53−1, and only when every such
/// key in the envelope says the same.
///
/// ```swift
/// EnvelopeID.salvage(Array(#"{"id":7,"op":"ping","args":{"a":1,"a":2}}"#.utf8))   // 7
/// EnvelopeID.salvage(Array(#"{"op":"ping","id":"7"}"#.utf8))                      // nil: not an integer
/// ```
public enum EnvelopeID {
    public static func salvage(_ json: [UInt8]) -> UInt64? { json.withUnsafeBytes { salvage($0) } }

    public static func salvage(_ json: UnsafeRawBufferPointer) -> UInt64? {
        var found: UInt64?
        var depth = 0
        var i = 0
        let n = json.count
        while i < n {
            let c = json[i]
            switch c {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                i += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                i += 1
            case UInt8(ascii: "\""):
                let start = i + 1
                guard let end = stringEnd(json, from: start) else { return found }
                i = end + 1
                guard depth == 1, end - start == 2, json[start] == UInt8(ascii: "i"), json[start + 1] == UInt8(ascii: "d") else { continue }
                var j = skipBlank(json, from: i)
                guard j < n, json[j] == UInt8(ascii: ":") else { continue }  // "id" as a value, not a key
                j = skipBlank(json, from: j + 1)
                guard let value = integer(json, from: j) else { return nil }  // an id, but not one a reply can carry
                if let found, found != value { return nil }
                found = value
            default:
                i += 1
            }
        }
        return found
    }

    /// The index of the quote that ends the string whose first byte is at `from`; nil when the bytes end first.
    private static func stringEnd(_ b: UnsafeRawBufferPointer, from: Int) -> Int? {
        var i = from
        while i < b.count {
            if b[i] == UInt8(ascii: "\\") {
                i += 2
            } else if b[i] == UInt8(ascii: "\"") {
                return i
            } else {
                i += 1
            }
        }
        return nil
    }

    private static func skipBlank(_ b: UnsafeRawBufferPointer, from: Int) -> Int {
        var i = from
        while i < b.count, [0x20, 0x09, 0x0A, 0x0D].contains(b[i]) { i += 1 }
        return i
    }

    /// A plain integer from 1 to 2^53−1 at `from`, ended by a byte that cannot continue a number.
    private static func integer(_ b: UnsafeRawBufferPointer, from: Int) -> UInt64? {
        var i = from, value: UInt64 = 0
        while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") {
            value = value &* 10 &+ UInt64(b[i] - UInt8(ascii: "0"))
            if value > RequestEnvelope.maxID || i - from > 16 { return nil }
            i += 1
        }
        guard i > from, b[from] != UInt8(ascii: "0") else { return nil }
        if i < b.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(b[i]) { return nil }
        return value
    }
}
