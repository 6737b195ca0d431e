import Testing
@testable import FerryBytes

@Suite struct FerryBytesTests {
    @Test func bigEndianRoundTripsEveryWidth() {
        for n in 1...8 {
            let v: UInt64 = 0x0102_0304_0506_0708 >> UInt64(8 * (8 - n))
            var out: [UInt8] = [0xEE]
            BigEndian.append(v, bytes: n, to: &out)
            #expect(out.count == n + 1 && out[1] == 1, "most significant first")
            #expect(out.withUnsafeBytes { BigEndian.load($0, at: 1, bytes: n) } == v)
            var r = BigEndianReader(out, at: 1)
            #expect(r.take(n) == v && r.remaining == 0 && r.take(1) == nil)
        }
        var low: [UInt8] = []
        BigEndian.append(0xFFFF_FFFF_0102, bytes: 2, to: &low)
        BigEndian.append(0xAB, bytes: 0, to: &low)
        BigEndian.append(.max, bytes: 8, to: &low)
        #expect(low == [1, 2] + [UInt8](repeating: 0xFF, count: 8), "the low bytes only, none for a width of 0")
        var fixed = [UInt8](repeating: 0, count: 6)
        BigEndian.store(0xA1B2_C3D4, bytes: 4, into: &fixed, at: 1)
        #expect(fixed == [0, 0xA1, 0xB2, 0xC3, 0xD4, 0])
    }

    @Test func theReaderRefusesWhatIsNotThere() {
        var r = BigEndianReader([0, 0, 0, 5, 0x61, 0x62])
        #expect(r.string() == nil, "a length past the end")
        var ok = BigEndianReader([0, 0, 0, 2, 0x61, 0x62, 9])
        #expect(ok.string() == "ab" && Array(ok.rest()) == [9] && ok.remaining == 0)
        var s = BigEndianReader([1, 2, 3])
        #expect(s.slice(4) == nil && s.slice(-1) == nil && s.take(9) == nil && s.at == 0, "failed reads consume nothing")
        #expect(s.slice(2).map(Array.init) == [1, 2] && s.at == 2)
    }

    @Test func utf8EqualityIsByteWise() {
        #expect(UTF8Bytes.equal("", ""))
        #expect(UTF8Bytes.equal("a-rather-long-key-over-eight-bytes", "a-rather-long-key-over-eight-bytes"))
        #expect(!UTF8Bytes.equal("a-rather-long-key-over-eight-bytes", "a-rather-long-key-over-eight-bytez"))
        #expect(!UTF8Bytes.equal("é", "e\u{301}") && "é" == "e\u{301}")
        #expect(!UTF8Bytes.equal("abc", "abcd"))
        let bridged = String(decoding: Array("non-contiguous?".utf8), as: UTF8.self)
        #expect(UTF8Bytes.equal(bridged, "non-contiguous?"))
    }

    /// Raw ranges: equal as arrays are, for every length around the eight-byte steps and a difference at every
    /// place (the word loop and the byte tail both decide).
    @Test func rawByteEqualityAgreesWithArrayEquality() {
        for n in 0...40 {
            let a = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            for k in -1..<n {
                var b = a
                if k >= 0 { b[k] ^= 0x20 }
                let same = a.withUnsafeBytes { x in b.withUnsafeBytes { y in UTF8Bytes.equal(x, y) } }
                #expect(same == (a == b))
            }
            let shorter = a.withUnsafeBytes { x in a.dropLast().withUnsafeBytes { y in UTF8Bytes.equal(x, y) } }
            #expect(shorter == (n == 0))
        }
    }

    /// `compare` orders as the bytes do (memcmp, then length), for every pair of a set with prefixes, equal
    /// strings, bytes past 0x7f and long common heads; a substring (not contiguous from its start) too.
    @Test func utf8CompareIsTheBytesOrder() {
        let words = ["", "a", "ab", "abc", "b", "key:000000000010", "key:000000000002", "é", "e\u{301}", "z\u{10FFFF}",
                     String(repeating: "x", count: 40) + "a", String(repeating: "x", count: 40) + "b", "A", "~"]
        for a in words {
            for b in words {
                let expected = Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) ? -1 : Array(a.utf8) == Array(b.utf8) ? 0 : 1
                #expect(UTF8Bytes.compare(a, b).signum() == expected, "\(a) / \(b)")
            }
        }
        let tail = "prefix-then-key:9"
        #expect(UTF8Bytes.compare(String(tail.dropFirst(12)), "key:10") > 0)
    }
}

@Suite struct Checksum64Tests {
    @Test func everySingleByteChangeAndEveryLengthChangesTheSum() {
        let value = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let sum = Checksum64.of(value)
        #expect(Checksum64.of(value) == sum, "deterministic")
        for i in stride(from: 0, to: value.count, by: 37) {
            for bit in [0, 3, 7] {
                var damaged = value
                damaged[i] ^= UInt8(1 << bit)
                #expect(Checksum64.of(damaged) != sum, "byte \(i) bit \(bit)")
            }
        }
        #expect(Checksum64.of(Array(value.dropLast())) != sum && Checksum64.of(value + [0]) != sum)
        #expect(Checksum64.of([]) != Checksum64.of([0]) && Checksum64.of([0]) != Checksum64.of([0, 0]))
    }

    /// The sums stored in existing indexes were made by `of`: a value read in pieces must give the same one.
    @Test func piecesGiveTheSumOfTheWhole() {
        // Fixed values of `of` before `Running` existed: a changed algorithm would call every stored value damaged.
        let before: [Int: UInt64] = [0: 0xd344_02ed_f2a3_9352, 1: 0x22d5_a9e0_de11_ed20, 8: 0xa8fc_f939_f127_368c, 1000: 0x50ab_5e68_b8d6_1bd1]
        for length in [0, 1, 7, 8, 9, 64, 1000, 4096 + 5] {
            let value = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 3) }
            for piece in [8, 16, 256, 4096] {
                var running = Checksum64.Running(count: value.count)
                var at = 0
                while at < value.count {
                    let end = min(value.count, at + piece)
                    running.add(Array(value[at..<end]))
                    at = end
                }
                #expect(running.finish() == Checksum64.of(value), "length \(length), pieces of \(piece)")
            }
            if let sum = before[length] { #expect(Checksum64.of(value) == sum, "length \(length): not the sum indexes hold") }
        }
    }
}
