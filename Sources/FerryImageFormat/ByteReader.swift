/// Bounds-checked reads of big- and little-endian integers from borrowed bytes.
///
/// Every read returns nil when any byte it needs lies outside the buffer (or the offset is negative or
/// absurd), so a sniffer turns "not there" into `.truncated` in its own words and nothing here can trap,
/// whatever offsets hostile input leads to. Values come back as `Int`; a 32- or 64-bit value that does not
/// fit in `Int` comes back as `Int.max`, which later fails a size or pixel-limit check instead of wrapping.
///
/// The reader borrows the caller's buffer and must not outlive the `withUnsafeBytes` call that lent it.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    var count: Int { bytes.count }

    /// Whether `length` bytes starting at `offset` are all inside the buffer (overflow-safe).
    func has(_ length: Int, at offset: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= count && length <= count - offset
    }

    func u8(at offset: Int) -> Int? {
        has(1, at: offset) ? Int(bytes[offset]) : nil
    }

    func u16be(at offset: Int) -> Int? {
        guard has(2, at: offset) else { return nil }
        return Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
    }

    func u16le(at offset: Int) -> Int? {
        guard has(2, at: offset) else { return nil }
        return Int(bytes[offset + 1]) << 8 | Int(bytes[offset])
    }

    func u24le(at offset: Int) -> Int? {
        guard has(3, at: offset) else { return nil }
        return Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset])
    }

    func u32be(at offset: Int) -> Int? {
        guard let value = raw32be(at: offset) else { return nil }
        return Int(exactly: value) ?? Int.max
    }

    func u32le(at offset: Int) -> Int? {
        guard let value = raw32le(at: offset) else { return nil }
        return Int(exactly: value) ?? Int.max
    }

    /// A signed little-endian 32-bit value (BMP's width and height).
    func i32le(at offset: Int) -> Int? {
        guard let value = raw32le(at: offset) else { return nil }
        return Int(Int32(bitPattern: value))
    }

    func u64be(at offset: Int) -> Int? {
        guard let high = raw32be(at: offset), let low = raw32be(at: offset + 4) else { return nil }
        return Int(exactly: UInt64(high) << 32 | UInt64(low)) ?? Int.max
    }

    /// A four-character code (chunk or box type) at `offset`.
    func fourCC(at offset: Int) -> FourCC? {
        guard let value = raw32be(at: offset) else { return nil }
        return FourCC(rawValue: value)
    }

    /// Whether the bytes at `offset` are exactly `expected`.
    func matches(_ expected: [UInt8], at offset: Int) -> Bool {
        guard has(expected.count, at: offset) else { return false }
        for (index, byte) in expected.enumerated() where bytes[offset + index] != byte {
            return false
        }
        return true
    }

    /// Whether the buffer is shorter than `offset + expected.count` and what it has there is the start of
    /// `expected` (at least `minimum` bytes of it): a signature cut short.
    func isCutPrefix(of expected: [UInt8], at offset: Int, minimum: Int = 2) -> Bool {
        let available = count - offset
        guard available >= minimum, available < expected.count else { return false }
        return matches(Array(expected[0..<available]), at: offset)
    }

    private func raw32be(at offset: Int) -> UInt32? {
        guard has(4, at: offset) else { return nil }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
            | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    private func raw32le(at offset: Int) -> UInt32? {
        guard has(4, at: offset) else { return nil }
        return UInt32(bytes[offset + 3]) << 24 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset])
    }
}

/// A four-character code: a PNG chunk, RIFF chunk or ISO box type, compared as a big-endian `UInt32`.
struct FourCC: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    let rawValue: UInt32

    init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// From exactly four ASCII characters: `"ispe"`, `"VP8 "`. Anything else is a programming error.
    init(stringLiteral value: StaticString) {
        precondition(value.utf8CodeUnitCount == 4, "a four-character code has four characters")
        var raw: UInt32 = 0
        for index in 0..<4 {
            raw = raw << 8 | UInt32(value.utf8Start[index])
        }
        rawValue = raw
    }

    /// The four characters, with anything that is not printable ASCII shown as `?` (hostile bytes stay tame
    /// in messages).
    var description: String {
        var text = ""
        for shift in stride(from: 24, through: 0, by: -8) {
            let byte = UInt8(truncatingIfNeeded: rawValue >> UInt32(shift))
            text.append(byte >= 0x20 && byte < 0x7F ? Character(Unicode.Scalar(byte)) : "?")
        }
        return text
    }
}

extension Array where Element == UInt8 {
    /// The ASCII bytes of a string literal, for signatures: `[UInt8](ascii: "GIF89a")`.
    init(ascii text: StaticString) {
        self.init(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
