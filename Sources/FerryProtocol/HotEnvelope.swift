#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The envelope of a request in the plain shape the hot operations (`ping`, `cache.get`, `cache.set`, `fetch`)
/// arrive in, read by one scan of its bytes, without building a `JSONValue` tree: `id`, `op`, and `args` holding
/// only `key`, `namespace`, `url` (strings), `ttl_ms` (an integer) and `body_fd` (`true` or `false`).
///
/// The scan accepts a strict subset of what `RequestEnvelope.parse` accepts, and reads it the same way: strings
/// of printable ASCII without escapes, an `id` of plain digits, JSON whitespace anywhere between tokens, each
/// member at most once. Anything else — another member (`timeout_ms`, `more`), another argument, an escape, a
/// byte over 0x7F, a duplicate, bad JSON — is `nil`, and the request takes the general path, which answers it
/// (errors included) exactly as before. So the scan never decides an error; it only finds the common case fast.
///
/// ```swift
/// let json = Array(#"{"id":7,"op":"cache.get","args":{"key":"a"}}"#.utf8)
/// let hot = json.withUnsafeBytes { HotEnvelope.scan($0) }
/// hot?.id                                   // 7
/// hot.map { json[$0.op] }                   // "cache.get" as bytes
/// ```
public struct HotEnvelope: Sendable, Equatable {
    public var id: UInt64 = 0
    /// Byte ranges of string contents in the scanned JSON (between the quotes).
    public var op: Range<Int> = 0..<0
    public var key: Range<Int>?
    public var namespace: Range<Int>?
    /// `fetch`'s URL: a fetch of the plain shape is spared the tree on its (general) path.
    public var url: Range<Int>?
    public var ttlMs: Int64?
    /// `body_fd` (a large body as a descriptor), when given.
    public var bodyFD: Bool?
    /// Whether `args` had any member.
    public var hasArgs = false

    /// An empty envelope (a holder's starting value; `scan` makes real ones).
    public init() {}

    /// The same envelope as `RequestEnvelope.parse` reads from these bytes (the ones scanned), for the general path
    /// of a request the fast path did not answer: it is spared the tree.
    public func requestEnvelope(_ json: UnsafeRawBufferPointer) -> RequestEnvelope {
        func text(_ r: Range<Int>) -> String { String(decoding: UnsafeRawBufferPointer(rebasing: json[r]), as: UTF8.self) }
        var args = JSONObject()
        if let key { args.members.append(("key", .string(text(key)))) }
        if let namespace { args.members.append(("namespace", .string(text(namespace)))) }
        if let url { args.members.append(("url", .string(text(url)))) }
        if let ttlMs { args.members.append(("ttl_ms", .int(ttlMs))) }
        if let bodyFD { args.members.append(("body_fd", .bool(bodyFD))) }
        return RequestEnvelope(id: id, op: text(op), args: args)
    }

    public static func scan(_ b: UnsafeRawBufferPointer) -> HotEnvelope? {
        var canonical = Scanner(b: b)
        if let e = canonical.canonical() { return e }
        return scanGeneral(b)
    }

    /// The scan of any spelling (`scan` tries the canonical one first).
    static func scanGeneral(_ b: UnsafeRawBufferPointer) -> HotEnvelope? {
        var s = Scanner(b: b)
        return s.envelope()
    }

    struct Scanner {
        let b: UnsafeRawBufferPointer
        var i = 0

        mutating func envelope() -> HotEnvelope? {
            var e = HotEnvelope()
            var seenID = false, seenOp = false, seenArgs = false
            guard take(UInt8(ascii: "{")) else { return nil }
            // Member names are matched as literals, quotes included: a plain name is exactly its bytes, and any
            // other name (or a name with an escape) is the general path's anyway. Scanning each name as a string
            // first cost four string scans a request.
            repeat {
                skipSpace()
                if member("\"id\"") {
                    guard !seenID, let id = integer(), id >= 1, id <= Int64(RequestEnvelope.maxID) else { return nil }
                    (e.id, seenID) = (UInt64(id), true)
                } else if member("\"op\"") {
                    guard !seenOp, let op = string() else { return nil }
                    (e.op, seenOp) = (op, true)
                } else if member("\"args\"") {
                    guard !seenArgs, args(into: &e) else { return nil }
                    seenArgs = true
                } else {
                    return nil
                }
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")), seenID, seenOp else { return nil }
            skipSpace()
            return i == b.count ? e : nil
        }

        /// `{}` or members `key`, `namespace`, `url`, `ttl_ms`, `body_fd`, each once.
        mutating func args(into e: inout HotEnvelope) -> Bool {
            guard take(UInt8(ascii: "{")) else { return false }
            if take(UInt8(ascii: "}")) { return true }
            e.hasArgs = true
            repeat {
                skipSpace()
                if member("\"key\"") {
                    guard e.key == nil, let v = string() else { return false }
                    e.key = v
                } else if member("\"namespace\"") {
                    guard e.namespace == nil, let v = string() else { return false }
                    e.namespace = v
                } else if member("\"url\"") {
                    guard e.url == nil, let v = string() else { return false }
                    e.url = v
                } else if member("\"ttl_ms\"") {
                    guard e.ttlMs == nil, let v = integer() else { return false }
                    e.ttlMs = v
                } else if member("\"body_fd\"") {
                    guard e.bodyFD == nil, let v = boolean() else { return false }
                    e.bodyFD = v
                } else {
                    return false
                }
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}"))
        }

        /// `true` or `false`, followed by a delimiter.
        mutating func boolean() -> Bool? {
            skipSpace()
            let value: Bool
            if word("true") { value = true } else if word("false") { value = false } else { return nil }
            guard i < b.count else { return nil }
            switch b[i] {
            case UInt8(ascii: ","), UInt8(ascii: "}"), 0x20, 0x09, 0x0A, 0x0D: return value
            default: return nil
            }
        }

        /// Takes the quoted member name `quoted` and the colon after it, if they are next.
        mutating func member(_ quoted: StaticString) -> Bool {
            let before = i
            guard word(quoted) else { return false }
            guard take(UInt8(ascii: ":")) else {
                i = before
                return false
            }
            return true
        }

        /// Takes the bytes of `text` if they are next, with no whitespace before them (member names with their
        /// quotes, the canonical spelling's punctuation, `true`). Compared as two words that overlap (a text of 4 to
        /// 16 bytes: its first and last 4 or 8), a shorter one byte by byte, never reading past either end; inlined,
        /// so the length is a constant. A call to `memcmp`, or a loop over the bytes, cost more than the comparison.
        @inline(__always)
        mutating func word(_ text: StaticString) -> Bool {
            let n = text.utf8CodeUnitCount
            guard b.count - i >= n, let base = b.baseAddress else { return false }
            let here = base + i, want = UnsafeRawPointer(text.utf8Start)
            let same: Bool
            switch n {
            case 8...16:
                same = here.loadUnaligned(as: UInt64.self) == want.loadUnaligned(as: UInt64.self)
                    && here.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self) == want.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
            case 4..<8:
                same = here.loadUnaligned(as: UInt32.self) == want.loadUnaligned(as: UInt32.self)
                    && here.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self) == want.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
            case 0..<4:
                var k = 0
                while k < n && here.load(fromByteOffset: k, as: UInt8.self) == want.load(fromByteOffset: k, as: UInt8.self) { k += 1 }
                same = k == n
            default:
                same = memcmp(here, want, n) == 0
            }
            guard same else { return false }
            i += n
            return true
        }

        /// A string of printable ASCII without escapes: the range of its contents. Eight bytes at a time while
        /// none of them ends the string or is refused (a key took ~20 instructions a byte one at a time).
        mutating func string() -> Range<Int>? {
            guard take(UInt8(ascii: "\"")), let base = b.baseAddress else { return nil }
            let start = i, n = b.count
            var k = i
            while n - k >= 8 && Self.plainText(base.loadUnaligned(fromByteOffset: k, as: UInt64.self)) { k += 8 }
            while k < n {
                let c = base.load(fromByteOffset: k, as: UInt8.self)
                if c == UInt8(ascii: "\"") {
                    i = k + 1
                    return start..<k
                }
                guard c >= 0x20, c < 0x7F, c != UInt8(ascii: "\\") else { return nil }
                k += 1
            }
            return nil
        }

        /// Whether all eight bytes of `w` are printable ASCII other than `"` and `\` (SWAR: a byte below 0x20,
        /// a byte with its high bit, or a byte equal to 0x7F, `"` or `\` sets that byte's high bit in the test).
        @inline(__always)
        static func plainText(_ w: UInt64) -> Bool {
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            @inline(__always) func hasZero(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
            let below20 = (w &- ones &* 0x20) & ~w & highs
            let special = hasZero(w ^ (ones &* 0x22)) | hasZero(w ^ (ones &* 0x5C)) | hasZero(w ^ (ones &* 0x7F))
            return (below20 | special | (w & highs)) == 0
        }

        /// A non-negative integer of plain digits (no sign, fraction or exponent; no leading zero), up to 15
        /// digits, followed by a delimiter. The index is kept in a local while the digits are read (through `self`,
        /// each digit cost ~25 instructions).
        mutating func integer() -> Int64? {
            skipSpace()
            guard let base = b.baseAddress else { return nil }
            let start = i, n = b.count, end = min(n, start + 15)
            var k = start
            var value: Int64 = 0
            while k < end {
                let digit = base.load(fromByteOffset: k, as: UInt8.self) &- UInt8(ascii: "0")
                if digit > 9 { break }
                value = value &* 10 &+ Int64(digit)
                k += 1
            }
            let digits = k - start
            guard digits > 0, !(digits > 1 && base.load(fromByteOffset: start, as: UInt8.self) == UInt8(ascii: "0")), k < n
            else { return nil }
            i = k
            switch base.load(fromByteOffset: k, as: UInt8.self) {
            case UInt8(ascii: ","), UInt8(ascii: "}"), 0x20, 0x09, 0x0A, 0x0D: return value
            default: return nil
            }
        }

        /// Skips whitespace, then takes `c` if it is next.
        mutating func take(_ c: UInt8) -> Bool {
            skipSpace()
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }

        mutating func skipSpace() {
            while i < b.count {
                switch b[i] {
                case 0x20, 0x09, 0x0A, 0x0D: i += 1
                default: return
                }
            }
        }
    }
}
