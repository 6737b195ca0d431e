/// A fast 64-bit checksum for telling a damaged record from the one that was written: `Checksum64`'s step (xor a
/// word in, multiply, fold the high bits down) run in four independent lanes over 32-byte stripes, so the CPU
/// overlaps four multiplies where `Checksum64` waits for each before the next. Why: the journal checksums every
/// set's record on the loop thread, and for 64 KiB values `Checksum64` was a fifth of that thread's time (perf,
/// issue 12); here a 64 KiB record takes about a quarter as long and a small one fewer instructions (the last
/// bytes are one overlapping load, not a byte loop). Not a cryptographic digest, and not `Checksum64`: rows the
/// store wrote before it keep their `Checksum64` sums (`ValueSum` says which a row has); values written since, and
/// fetched bodies adopted since session 21, have this one.
///
/// ```swift
/// let sum = [UInt8]("a journal record".utf8).withUnsafeBytes { StripedChecksum.of($0) }
/// [UInt8]("a journal recore".utf8).withUnsafeBytes { StripedChecksum.of($0) } == sum   // false
/// ```
public enum StripedChecksum {
    static let k: UInt64 = 0x9E37_79B9_7F4A_7C15

    public static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let n = bytes.count
        // Four lanes seeded apart, the length in the first: words that trade places, or a record cut short,
        // change the sum.
        var a = 0x243F_6A88_85A3_08D3 ^ (UInt64(n) &* k), b: UInt64 = 0x1319_8A2E_0370_7344
        var c: UInt64 = 0xA409_3822_299F_31D0, d: UInt64 = 0x082E_FA98_EC4E_6C89
        guard let base = bytes.baseAddress, n > 0 else { return finish(a, b, c, d) }
        var i = 0
        while i + 32 <= n {
            a = step(a, word(base, i))
            b = step(b, word(base, i + 8))
            c = step(c, word(base, i + 16))
            d = step(d, word(base, i + 24))
            i += 32
        }
        while i + 8 <= n {
            a = step(a, word(base, i))
            i += 8
        }
        if i < n {
            // The last 1 to 7 bytes: as the final word of the record (overlapping bytes already taken) when there
            // is one, else gathered byte by byte; the length in the seed keeps records of different lengths apart.
            var tail: UInt64 = 0
            if n >= 8 {
                tail = word(base, n - 8)
            } else {
                for j in 0..<n { tail |= UInt64(base.load(fromByteOffset: j, as: UInt8.self)) << UInt64(8 * j) }
            }
            b = step(b, tail)
        }
        return finish(a, b, c, d)
    }

    @inline(__always)
    static func word(_ base: UnsafeRawPointer, _ at: Int) -> UInt64 {
        UInt64(littleEndian: base.loadUnaligned(fromByteOffset: at, as: UInt64.self))
    }

    @inline(__always)
    static func step(_ h: UInt64, _ word: UInt64) -> UInt64 {
        let m = (h ^ word) &* k
        return m ^ (m >> 29)
    }

    /// The lanes folded one into the next (so a lane's place matters), then mixed down.
    static func finish(_ a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64) -> UInt64 {
        var h = step(step(step(a, b), c), d)
        h ^= h >> 32
        h = h &* 0xD6E8_FEB8_6659_FD93
        h ^= h >> 32
        return h
    }
}

extension StripedChecksum {
    /// The same checksum over a value read in pieces (a large value streamed from disk): `count` is the whole
    /// value's length, and every piece but the last is a multiple of 32 bytes long, so the stripes fall where `of`
    /// puts them. The last 8 bytes seen are kept, for a last piece too short to hold the final overlapping word.
    ///
    /// ```swift
    /// var sum = StripedChecksum.Running(count: value.count)
    /// sum.add(piece1)      // 32 * n bytes
    /// sum.add(lastPiece)
    /// sum.finish() == value.withUnsafeBytes { StripedChecksum.of($0) }   // true
    /// ```
    public struct Running: Sendable {
        private var a: UInt64, b: UInt64 = 0x1319_8A2E_0370_7344
        private var c: UInt64 = 0xA409_3822_299F_31D0, d: UInt64 = 0x082E_FA98_EC4E_6C89
        private let count: Int
        private var seen = 0
        /// The last eight bytes added so far, as they lie (little-endian word of bytes `seen - 8 ..< seen`).
        private var lastWord: UInt64 = 0

        public init(count: Int) {
            self.count = count
            a = 0x243F_6A88_85A3_08D3 ^ (UInt64(count) &* StripedChecksum.k)
        }

        public mutating func add(_ bytes: [UInt8]) { bytes.withUnsafeBytes { add($0) } }

        /// Adds the next piece; one whose length is not a multiple of 32 must end the value.
        public mutating func add(_ bytes: UnsafeRawBufferPointer) {
            let n = bytes.count
            guard n > 0, let base = bytes.baseAddress else { return }
            precondition(seen % 32 == 0 && seen + n <= count, "StripedChecksum.Running: only the last piece may end between stripes")
            var i = 0
            while i + 32 <= n {
                a = StripedChecksum.step(a, StripedChecksum.word(base, i))
                b = StripedChecksum.step(b, StripedChecksum.word(base, i + 8))
                c = StripedChecksum.step(c, StripedChecksum.word(base, i + 16))
                d = StripedChecksum.step(d, StripedChecksum.word(base, i + 24))
                i += 32
            }
            if seen + n == count {
                while i + 8 <= n {
                    a = StripedChecksum.step(a, StripedChecksum.word(base, i))
                    i += 8
                }
                if i < n { b = StripedChecksum.step(b, tail(base, n, from: i)) }
            }
            // Past the stripes of a piece that does not end the value there is nothing (its length is a multiple
            // of 32), so the bytes kept are the piece's last eight, or, for a piece shorter than that, the older
            // bytes shifted down with the piece's after them.
            if n >= 8 {
                lastWord = StripedChecksum.word(base, n - 8)
            } else {
                for j in 0..<n { lastWord = lastWord >> 8 | UInt64(base.load(fromByteOffset: j, as: UInt8.self)) << 56 }
            }
            seen += n
        }

        /// `of`'s last 1 to 7 bytes: the value's final word (overlapping bytes already taken) when it has eight
        /// bytes, else the bytes gathered one by one.
        private func tail(_ base: UnsafeRawPointer, _ n: Int, from i: Int) -> UInt64 {
            if n >= 8 { return StripedChecksum.word(base, n - 8) }
            var piece: UInt64 = 0
            for j in 0..<n { piece |= UInt64(base.load(fromByteOffset: j, as: UInt8.self)) << UInt64(8 * j) }
            guard count >= 8 else { return piece }
            // The final word straddles the previous piece: its last 8 - n bytes, then this piece's n.
            return lastWord >> UInt64(8 * n) | piece << UInt64(8 * (8 - n))
        }

        public func finish() -> UInt64 { StripedChecksum.finish(a, b, c, d) }
    }
}
