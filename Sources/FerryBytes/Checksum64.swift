/// A fast 64-bit checksum of a byte string, for telling a damaged value from the one that was written (a flipped
/// bit, a torn page, a file swapped under the daemon). One multiply per 8 bytes, so checking a value read from disk
/// costs far less than reading it; not a cryptographic digest.
///
/// ```swift
/// let sum = Checksum64.of([1, 2, 3])
/// Checksum64.of([1, 2, 4]) == sum   // false
/// ```
public enum Checksum64 {
    public static func of(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes { of($0) } }

    public static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let k: UInt64 = 0x9E37_79B9_7F4A_7C15
        var h: UInt64 = 0x243F_6A88_85A3_08D3 ^ (UInt64(bytes.count) &* k)
        var i = 0
        let n = bytes.count
        if let base = bytes.baseAddress {
            while i + 8 <= n {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                h = (h ^ word) &* k
                h ^= h >> 29
                i += 8
            }
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while i < n {
                tail |= UInt64(base.load(fromByteOffset: i, as: UInt8.self)) << shift
                shift += 8
                i += 1
            }
            h = (h ^ tail) &* k
        }
        h ^= h >> 32
        h = h &* 0xD6E8_FEB8_6659_FD93
        h ^= h >> 32
        return h
    }
}
