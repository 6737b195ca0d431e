#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The canonical spelling of a hot request, as every Ferry client writes it (FerryClient's `RequestEnvelope`, the
/// Python client's compact `json.dumps`, ferry-bench): no whitespace, `id`, `op`, then `args` holding `key` and
/// perhaps `namespace`, in that order:
///
/// ```
/// {"id":7,"op":"ping"}
/// {"id":7,"op":"cache.get","args":{"key":"user:1"}}
/// {"id":7,"op":"cache.get","args":{"key":"user:1","namespace":"app"}}
/// ```
///
/// Read by matching the punctuation and member names as whole literals and only the values as values, with the
/// general scan's own `integer()` and `string()`: ~500 instructions for a cache.get where the general scan, which
/// looks for whitespace and any member order between every token, took ~1,000 (callgrind, issue 12). Any other
/// spelling — or anything this does not accept — is nil here and goes to the general scan, which accepts every
/// canonical envelope too and reads it the same (`HotEnvelopeTests` compares both on every envelope it has).
extension HotEnvelope.Scanner {
    mutating func canonical() -> HotEnvelope? {
        var e = HotEnvelope()
        guard literal("{\"id\":"), let id = integer(), id >= 1, id <= Int64(RequestEnvelope.maxID) else { return nil }
        e.id = UInt64(id)
        guard literal(",\"op\":"), let op = string() else { return nil }
        e.op = op
        if literal(",\"args\":{\"key\":") {
            guard let key = string() else { return nil }
            (e.key, e.hasArgs) = (key, true)
            if literal(",\"namespace\":") {
                guard let namespace = string() else { return nil }
                e.namespace = namespace
            }
            guard literal("}") else { return nil }
        }
        guard literal("}"), i == b.count else { return nil }
        return e
    }

    /// Takes the bytes of `text` if they are next, with no whitespace before them. Compared as two words that
    /// overlap (a literal of 4 to 16 bytes: its first and last 4 or 8), a shorter one byte by byte, never reading
    /// past either end; inlined, so the length is a constant. A call to `memcmp` cost more than the comparison.
    @inline(__always)
    mutating func literal(_ text: StaticString) -> Bool {
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
}
