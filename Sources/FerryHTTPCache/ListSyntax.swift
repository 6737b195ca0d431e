// Small pieces of HTTP field-value syntax (RFC 9110 §5.6) shared by the parsers of this module.
// Everything works on UTF-8 bytes: header syntax is defined over octets, and this keeps the module free of
// Foundation.

enum ListSyntax {
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let comma: UInt8 = 0x2C
    static let quote: UInt8 = 0x22
    static let backslash: UInt8 = 0x5C
    static let equals: UInt8 = 0x3D

    /// The largest delta-seconds value a cache has to represent: values that overflow are clamped to 2^31
    /// (RFC 9111 §1.2.2).
    static let deltaSecondsCap: Int64 = 2_147_483_648

    static func isOWS(_ b: UInt8) -> Bool { b == space || b == tab }

    /// tchar (RFC 9110 §5.6.2): the characters of a token.
    static func isTChar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true  // DIGIT, ALPHA
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: return true
        default: return false
        }
    }

    static func isToken(_ s: String) -> Bool {
        !s.utf8.isEmpty && s.utf8.allSatisfy(isTChar)
    }

    /// The string without leading and trailing SP / HTAB (optional whitespace).
    static func trimOWS(_ s: Substring) -> Substring {
        let u = s.utf8
        var start = u.startIndex
        var end = u.endIndex
        while start < end, isOWS(u[start]) { start = u.index(after: start) }
        while end > start, isOWS(u[u.index(before: end)]) { end = u.index(before: end) }
        return Substring(u[start..<end])
    }

    static func trimOWS(_ s: String) -> String { String(trimOWS(Substring(s))) }

    /// Splits a comma-separated list (RFC 9110 §5.6.1) into trimmed members, ignoring commas inside
    /// quoted strings and dropping empty members (which recipients must ignore).
    ///
    /// `"a, \"b,c\" ,, d"` → `["a", "\"b,c\"", "d"]`
    static func splitList(_ value: String) -> [Substring] {
        var members: [Substring] = []
        let u = value.utf8
        var memberStart = u.startIndex
        var i = u.startIndex
        var inQuotes = false
        while i < u.endIndex {
            let b = u[i]
            if inQuotes {
                if b == backslash {
                    let next = u.index(after: i)
                    if next < u.endIndex { i = next }
                } else if b == quote {
                    inQuotes = false
                }
            } else if b == quote {
                inQuotes = true
            } else if b == comma {
                let m = trimOWS(Substring(u[memberStart..<i]))
                if !m.isEmpty { members.append(m) }
                memberStart = u.index(after: i)
            }
            i = u.index(after: i)
        }
        let m = trimOWS(Substring(u[memberStart..<u.endIndex]))
        if !m.isEmpty { members.append(m) }
        return members
    }

    /// delta-seconds = 1*DIGIT (RFC 9111 §1.2.2). Leading zeros are fine; values beyond 2^31 are clamped to
    /// 2^31. Anything else (empty, a sign, a fraction, trailing letters) is invalid and gives nil.
    static func deltaSeconds<S: StringProtocol>(_ s: S) -> Int64? {
        var value: Int64 = 0
        var sawDigit = false
        for b in s.utf8 {
            guard b >= 0x30, b <= 0x39 else { return nil }
            sawDigit = true
            if value < deltaSecondsCap {
                value = value * 10 + Int64(b - 0x30)
            }
        }
        guard sawDigit else { return nil }
        return min(value, deltaSecondsCap)
    }

    /// The content of a quoted-string with its escapes resolved, or nil when `s` is not exactly one
    /// well-formed quoted-string.
    static func unquote<S: StringProtocol>(_ s: S) -> String? {
        let bytes = Array(s.utf8)
        guard bytes.count >= 2, bytes.first == quote, bytes.last == quote else { return nil }
        var out: [UInt8] = []
        var i = 1
        while i < bytes.count - 1 {
            let b = bytes[i]
            if b == backslash {
                guard i + 1 < bytes.count - 1 else { return nil }
                out.append(bytes[i + 1])
                i += 2
            } else if b == quote {
                return nil
            } else {
                out.append(b)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// ASCII-only lower-casing: header names and directive names are ASCII, and this avoids Unicode case
    /// mapping surprises.
    static func lower<S: StringProtocol>(_ s: S) -> String {
        var bytes = Array(s.utf8)
        for i in bytes.indices where bytes[i] >= 0x41 && bytes[i] <= 0x5A { bytes[i] += 0x20 }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Case-insensitive ASCII comparison without allocating.
    static func equalsIgnoringCase<A: StringProtocol, B: StringProtocol>(_ a: A, _ b: B) -> Bool {
        let x = a.utf8
        let y = b.utf8
        guard x.count == y.count else { return false }
        for (p, q) in zip(x, y) {
            let lp = (p >= 0x41 && p <= 0x5A) ? p + 0x20 : p
            let lq = (q >= 0x41 && q <= 0x5A) ? q + 0x20 : q
            if lp != lq { return false }
        }
        return true
    }
}

/// The pieces of HTTP syntax other modules check requests with (the same rules the cache parses by).
///
/// ```swift
/// HTTPSyntax.isToken("X-Api-Version")   // true: a valid field name or method
/// HTTPSyntax.trimmingOWS("  gzip\t")     // "gzip"
/// ```
public enum HTTPSyntax {
    /// RFC 9110 `token`: the characters of methods and field names.
    public static func isToken(_ s: String) -> Bool { ListSyntax.isToken(s) }

    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    public static func trimmingOWS(_ s: String) -> String { ListSyntax.trimOWS(s) }
}
