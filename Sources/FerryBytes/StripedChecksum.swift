/// A fast 64-bit checksum for telling a damaged record from the one that was written: `Checksum64`'s step (xor a
/// word in, multiply, fold the high bits down) run in four independent lanes over 32-byte stripes, so the CPU
/// overlaps four multiplies where `Checksum64` waits for each before the next. Why: the journal checksums every
/// set's record on the loop thread, and for 64 KiB values `Checksum64` was a fifth of that thread's time (perf,
/// issue 12); here a 64 KiB record takes about a quarter as long and a small one fewer instructions (the last
/// bytes are one overlapping load, not a byte loop). Not a cryptographic digest, and not `Checksum64`: values
/// kept in the index and in blob files keep `Checksum64`, which stored checksums were made with.
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
