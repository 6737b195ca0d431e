import Testing
@testable import FerryBytes

/// The cursor writes what the array writers write for the same values (decimal as Swift prints it, which is
/// what `JSONWriter.writeInt` writes: `HotPathTests` compares whole replies), and a write that does not fit writes
/// nothing at all.
@Suite struct ByteCursorTests {
    static func written(capacity: Int = 64, _ write: (inout ByteCursor) -> Void) -> (bytes: [UInt8], overflowed: Bool) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { room in
            var c = ByteCursor(room)
            write(&c)
            return (Array(c.written), c.overflowed)
        }
    }

    @Test func integersAsJSONWriterWritesThem() {
        var values: [Int64] = [0, 1, 9, 10, 11, 99, 100, 101, -1, -9, -10, 1_764_000_000_000, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            values += [power - 1, power, power + 1, -power, -(power - 1)]
        }
        for n in values {
            let got = Self.written { $0.int(n) }
            #expect(got.bytes == Array(String(n).utf8) && !got.overflowed, "\(n)")
        }
    }

    /// The digit count the writer makes room for, at every edge its guess from the bit length can be wrong at.
    @Test func digitCountsAtEveryPowerOfTwoAndOfTen() {
        var values: [UInt64] = [0, 1, 2, .max, .max - 1]
        for k in 1..<64 { values += [(1 << k) - 1, 1 << k, (1 << k) + 1] }
        var power: UInt64 = 1
        for _ in 0..<19 {
            power *= 10
            values += [power - 1, power, power + 1]
        }
        for m in values {
            #expect(ByteCursor.decimalDigits(m) == String(m).count, "\(m)")
            #expect(Self.written { $0.int(Int64(bitPattern: m)) }.bytes == Array(String(Int64(bitPattern: m)).utf8))
        }
    }

    @Test func textBytesAndAPatchedHeader() {
        let got = Self.written { c in
            let at = c.reserve(8)
            c.ascii("{\"size\":")
            c.int(42)
            c.byte(UInt8(ascii: "}"))
            [UInt8]([1, 2, 3]).withUnsafeBytes { c.bytes($0) }
            c.patch((UInt64(11) << 32 | 3).bigEndian, at: at!)
        }
        #expect(got.bytes == [0, 0, 0, 11, 0, 0, 0, 3] + Array("{\"size\":42}".utf8) + [1, 2, 3] && !got.overflowed)
    }

    @Test func stringsAndBigEndianFieldsAsTheArrayWritersWriteThem() {
        for n in 0...8 {
            var expected: [UInt8] = []
            BigEndian.append(0x0102_0304_0506_0708, bytes: n, to: &expected)
            #expect(Self.written { $0.bigEndian(0x0102_0304_0506_0708, bytes: n) }.bytes == expected, "\(n) bytes")
        }
        for s in ["", "default", "key:000000001234", "日本語", String(repeating: "x", count: 40)] {
            #expect(Self.written { $0.utf8(s) }.bytes == Array(s.utf8))
        }
    }

    @Test func aWriteThatDoesNotFitWritesNothingAndNothingAfterIt() {
        let got = Self.written(capacity: 10) { c in
            c.ascii("12345678")
            c.int(123)          // 3 more: does not fit
            c.byte(UInt8(ascii: "x"))   // would fit, but the cursor has overflowed
        }
        #expect(got.bytes == Array("12345678".utf8) && got.overflowed)
        let exact = Self.written(capacity: 4) { $0.int(-123) }
        #expect(exact.bytes == Array("-123".utf8) && !exact.overflowed)
        let short = Self.written(capacity: 3) { $0.int(-123) }
        #expect(short.bytes.isEmpty && short.overflowed)
        let reserved = Self.written(capacity: 4) { c in #expect(c.reserve(8) == nil) }
        #expect(reserved.overflowed)
    }
}
