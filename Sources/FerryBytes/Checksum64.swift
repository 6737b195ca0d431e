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

    public static func of(_ bytes: ArraySlice<UInt8>) -> UInt64 { bytes.withUnsafeBytes { of($0) } }

    public static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var running = Running(count: bytes.count)
        running.add(bytes)
        return running.finish()
    }

    static let k: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The same checksum over a value read in pieces (a large value streamed from disk): `count` is the whole
    /// value's length, and every piece but the last is a multiple of 8 bytes long, so the words fall where `of`
    /// puts them.
    ///
    /// ```swift
    /// var sum = Checksum64.Running(count: value.count)
    /// sum.add(piece1)      // 8 * n bytes
    /// sum.add(lastPiece)
    /// sum.finish() == Checksum64.of(value)   // true
    /// ```
    public struct Running: Sendable {
        private var h: UInt64
        private var tailSeen = false

        public init(count: Int) { h = 0x243F_6A88_85A3_08D3 ^ (UInt64(count) &* Checksum64.k) }

        public mutating func add(_ bytes: [UInt8]) { bytes.withUnsafeBytes { add($0) } }

        /// Adds the next piece; a piece whose length is not a multiple of 8 must be the last one.
        public mutating func add(_ bytes: UnsafeRawBufferPointer) {
            precondition(!tailSeen, "Checksum64.Running: only the last piece may end between words")
            let k = Checksum64.k
            var i = 0
            let n = bytes.count
            guard let base = bytes.baseAddress else { return }
            while i + 8 <= n {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                h = (h ^ word) &* k
                h ^= h >> 29
                i += 8
            }
            guard i < n else { return }
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while i < n {
                tail |= UInt64(base.load(fromByteOffset: i, as: UInt8.self)) << shift
                shift += 8
                i += 1
            }
            h = (h ^ tail) &* k
            tailSeen = true
        }

        public func finish() -> UInt64 {
            // A value whose length is a multiple of 8 (or empty) mixes in an empty tail, as `of` always did.
            var h = tailSeen ? self.h : (self.h ^ 0) &* Checksum64.k
            h ^= h >> 32
            h = h &* 0xD6E8_FEB8_6659_FD93
            h ^= h >> 32
            return h
        }
    }
}
