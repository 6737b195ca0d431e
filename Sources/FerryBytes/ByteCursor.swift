/// Writes bytes into room reserved beforehand, one pointer store at a time: the fast path's reply writer
/// (`HotReply`, beside `JSONWriter`, which appends to an array) and the journal's record writer. Why: each
/// `Array.append(contentsOf:)` checks the array's uniqueness and capacity and takes a generic path, ~60 instructions
/// for a few bytes; a reply of a memory hit made ~10 of them, a fifth of its cost (callgrind, issue 12). Here a
/// write is a bounds check and a copy.
///
/// The room is fixed: a write that does not fit writes nothing and sets `overflowed`, and the caller writes again
/// with more room (`Connection.writeHotFrame` does). The bytes are the ones the array writers write for the same
/// values (`ByteCursorTests`; `HotPathTests` compares whole replies with `JSONWriter`'s).
///
/// ```swift
/// withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { room in
///     var c = ByteCursor(room)
///     c.ascii("{\"size\":"); c.int(1234); c.byte(UInt8(ascii: "}"))
///     c.written      // {"size":1234} as bytes
/// }
/// ```
public struct ByteCursor {
    @usableFromInline let start: UnsafeMutablePointer<UInt8>
    @usableFromInline var at: UnsafeMutablePointer<UInt8>
    @usableFromInline let end: UnsafeMutablePointer<UInt8>
    /// A write did not fit (and it and every later one wrote nothing).
    @usableFromInline var _overflowed = false
    public var overflowed: Bool { _overflowed }

    /// A cursor at the start of `room` (which must outlive it).
    public init(_ room: UnsafeMutableBufferPointer<UInt8>) {
        let base = room.baseAddress ?? UnsafeMutablePointer(bitPattern: 1)!
        start = base
        at = base
        end = base + room.count
    }

    /// Bytes written so far.
    public var count: Int { at - start }

    /// The bytes written so far (valid while the room is).
    public var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: start, count: count) }

    /// Room for `n` more bytes, or false (and `overflowed`).
    @inlinable @inline(__always)
    mutating func fits(_ n: Int) -> Bool {
        if !_overflowed && end - at >= n { return true }
        _overflowed = true
        return false
    }

    @inlinable
    public mutating func byte(_ b: UInt8) {
        guard fits(1) else { return }
        at.pointee = b
        at += 1
    }

    /// Skips `n` bytes, to be filled later through `patch` (a frame's header, whose lengths come last).
    public mutating func reserve(_ n: Int) -> Int? {
        guard fits(n) else { return nil }
        let offset = count
        at += n
        return offset
    }

    /// Stores `value`'s bytes at `offset` (a reserved place).
    public func patch<T>(_ value: T, at offset: Int) {
        precondition(offset >= 0 && offset + MemoryLayout<T>.size <= count)
        UnsafeMutableRawPointer(start + offset).storeBytes(of: value, as: T.self)
    }

    @inlinable
    public mutating func ascii(_ s: StaticString) {
        bytes(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    @inlinable
    public mutating func bytes(_ raw: UnsafeRawBufferPointer) {
        guard let base = raw.baseAddress, fits(raw.count) else { return }
        UnsafeMutableRawPointer(at).copyMemory(from: base, byteCount: raw.count)
        at += raw.count
    }

    /// A string's UTF-8 bytes.
    public mutating func utf8(_ s: String) {
        if s.utf8.withContiguousStorageIfAvailable({ bytes(UnsafeRawBufferPointer($0)) }) == nil {
            var copy = s
            copy.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
        }
    }

    /// The low `count` bytes of `v`, most significant first (as `BigEndian.append`). Inlined: the journal's record
    /// head writes six fields of constant widths, each a call of ~30 instructions before.
    @inlinable @inline(__always)
    public mutating func bigEndian(_ v: UInt64, bytes count: Int) {
        precondition(count >= 0 && count <= 8, "ByteCursor.bigEndian: 0 to 8 bytes")
        guard count > 0, fits(count) else { return }
        let word = (v &<< UInt64(8 &* (8 &- count))).bigEndian
        if end - at >= 8 {
            // One store of the whole word; the bytes past `count` are room not yet written, and stay so.
            UnsafeMutableRawPointer(at).storeBytes(of: word, as: UInt64.self)
        } else {
            storeFirst(count, of: word)
        }
        at += count
    }

    /// The first `count` bytes of `word` at the cursor (near the end of the room, where a whole word would not fit).
    @usableFromInline
    func storeFirst(_ count: Int, of word: UInt64) {
        withUnsafeBytes(of: word) { UnsafeMutableRawPointer(at).copyMemory(from: $0.baseAddress!, byteCount: count) }
    }

    /// `n` in decimal, as `JSONWriter.writeInt` writes it: the digits counted first, then written in place from the
    /// last, two a step from a table (one 16-bit load and store each), with no scratch buffer to copy from. A
    /// 13-digit time took ~180 instructions a digit at a time; the three integers of a get's reply take ~300 in all
    /// (callgrind, issue 12: the copy out of the scratch, ~40 a reply, is what writing in place saved).
    public mutating func int(_ n: Int64) {
        var m = n.magnitude
        let sign = n < 0 ? 1 : 0
        let digits = ByteCursor.decimalDigits(m)
        guard fits(digits + sign) else { return }
        if sign == 1 {
            at.pointee = UInt8(ascii: "-")
            at += 1
        }
        let pairs = UnsafeRawPointer(ByteCursor.digitPairs.utf8Start)
        var p = UnsafeMutableRawPointer(at + digits)
        at += digits
        while m >= 100 {
            let r = Int(m % 100)
            m /= 100
            p -= 2
            p.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 2 * r, as: UInt16.self), as: UInt16.self)
        }
        if m >= 10 {
            p -= 2
            p.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 2 * Int(m), as: UInt16.self), as: UInt16.self)
        } else {
            (p - 1).storeBytes(of: UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: m), as: UInt8.self)
        }
    }

    /// How many decimal digits `m` has (1 for 0): a guess from its bit length (log10 2 ≈ 1233 / 4096), corrected by
    /// one comparison with the power of ten it may have reached. (`m | 1`: 0 compares as 1; no other answer moves,
    /// as a power of ten past 1 is even.)
    static func decimalDigits(_ m: UInt64) -> Int {
        let bits = 64 - (m | 1).leadingZeroBitCount
        let guess = (bits &* 1233) >> 12   // the digits of 2^(bits-1), or one fewer
        return guess + ((m | 1) < powerOfTen(guess) ? 0 : 1)
    }

    /// 10^i for i in 0 ... 19 (a switch of constants: LLVM makes it a table lookup, with no lazy global).
    static func powerOfTen(_ i: Int) -> UInt64 {
        switch i {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1_000
        case 4: 10_000
        case 5: 100_000
        case 6: 1_000_000
        case 7: 10_000_000
        case 8: 100_000_000
        case 9: 1_000_000_000
        case 10: 10_000_000_000
        case 11: 100_000_000_000
        case 12: 1_000_000_000_000
        case 13: 10_000_000_000_000
        case 14: 100_000_000_000_000
        case 15: 1_000_000_000_000_000
        case 16: 10_000_000_000_000_000
        case 17: 100_000_000_000_000_000
        case 18: 1_000_000_000_000_000_000
        default: 10_000_000_000_000_000_000
        }
    }

    /// "00" to "99", one after the other.
    private static let digitPairs: StaticString = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
}
