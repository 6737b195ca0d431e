import Testing
@testable import FerryBytes

/// The journal's record checksum: any one damaged byte, a record cut short or grown, and words that trade places
/// (within a stripe or between stripes) change it; and it stays the function journals on disk were written with.
@Suite struct StripedChecksumTests {
    static func sum(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes { StripedChecksum.of($0) } }

    static func pattern(_ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 3) } }

    /// Every length around the stripe (32), the word (8) and the tail (1 to 7 bytes), every byte position, three
    /// bits each: the lanes, the word loop and the overlapping last word all cover every byte.
    @Test func everySingleBitChangeAtEveryPlaceAndEveryLengthChangesTheSum() {
        for length in Array(0...80) + [255, 256, 257, 4096 + 13] {
            let value = Self.pattern(length)
            let sum = Self.sum(value)
            #expect(Self.sum(value) == sum, "deterministic")
            for i in 0..<length {
                for bit in [0, 3, 7] {
                    var damaged = value
                    damaged[i] ^= UInt8(1 << bit)
                    #expect(Self.sum(damaged) != sum, "length \(length), byte \(i), bit \(bit)")
                }
            }
            #expect(Self.sum(value + [0]) != sum, "length \(length) grown by a zero byte")
            if length > 0 { #expect(Self.sum(Array(value.dropLast())) != sum, "length \(length) cut short") }
        }
    }

    @Test func wordsThatTradePlacesChangeTheSum() {
        let value = Self.pattern(256)
        let sum = Self.sum(value)
        for (a, b) in [(0, 8), (0, 32), (8, 48), (24, 200), (0, 248)] {
            var swapped = value
            for j in 0..<8 { swapped.swapAt(a + j, b + j) }
            #expect(swapped != value && Self.sum(swapped) != sum, "words at \(a) and \(b)")
        }
    }

    /// Fixed values: journals on disk were summed with this function, and a changed one would call every record of
    /// a journal written before an upgrade damaged (and drop the sets it holds).
    @Test func theSumJournalsWereWrittenWith() {
        // Also computed by an independent implementation of the description above (Python), to the same values.
        let fixed: [Int: UInt64] = [0: 0x45a0_0f9d_72c1_fbb1, 7: 0xc196_beb9_066d_0cca, 100: 0x9692_e904_66de_76a0,
                                    65_536: 0xb0ed_aa72_36e9_26d1]
        for (length, expected) in fixed {
            #expect(Self.sum(Self.pattern(length)) == expected, "length \(length): \(String(Self.sum(Self.pattern(length)), radix: 16))")
        }
    }

    /// In pieces, as a blob is read from disk: every split whose pieces are whole stripes (but the last) gives `of`'s
    /// sum, including last pieces shorter than the final overlapping word.
    @Test func inPiecesTheSameSumAsWhole() {
        for n in [0, 1, 7, 8, 9, 31, 32, 33, 39, 40, 63, 64, 65, 71, 95, 96, 100, 1000, 4133] {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) }
            let whole = bytes.withUnsafeBytes { StripedChecksum.of($0) }
            for piece in [32, 64, 96, 992, 4096] {
                var running = StripedChecksum.Running(count: n)
                var at = 0
                while at < n {
                    let next = min(n, at + piece)
                    running.add(Array(bytes[at..<next]))
                    at = next
                }
                #expect(running.finish() == whole, "\(n) bytes in pieces of \(piece)")
            }
        }
    }
}
