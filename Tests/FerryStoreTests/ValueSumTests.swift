import Foundation
import Testing
import FerryBytes
import FerryCache
@testable import FerryStore

/// Values the store writes and files it adopts are summed with `StripedChecksum`; rows written before keep their
/// `Checksum64` sums and are still checked with them, whole and in pieces.
@Suite struct ValueSumTests {
    @Test func eachSumChecksWithItsOwnFunction() {
        let value = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 29) }
        let striped = ValueSum.of(value)
        let word = ValueSum.word(Int64(bitPattern: Checksum64.of(value)))
        #expect(striped.matches(value) && word.matches(value))
        #expect(striped != .striped(word.checksumColumn!), "the two functions differ")
        var other = value
        other[4999] ^= 1
        #expect(!striped.matches(other) && !word.matches(other))
        for sum in [striped, word] {
            var running = sum.running(count: value.count)
            running.add(Array(value[..<4096]))
            running.add(Array(value[4096...]))
            #expect(running.matches(sum))
            #expect(!running.matches(sum == striped ? word : striped), "a sum of the other kind never matches")
        }
        #expect(ValueSum(checksum: 5, striped: nil) == .word(5) && ValueSum(checksum: nil, striped: 6) == .striped(6))
        #expect(ValueSum(checksum: nil, striped: nil) == nil)
    }

    /// The rows an older daemon wrote (only `checksum`, `Checksum64`), inline and blob: read whole and streamed,
    /// they check out; made wrong, they are misses counted as damage.
    @Test func rowsSummedBeforeAreCheckedWithTheirOwnSum() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let small = [UInt8](repeating: 3, count: 1000)
        let big = (0..<300_001).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        do {
            let h = try StoreHarness(dir: dir)
            #expect(try h.set("small", small) && h.set("big", big) && h.set("new", big.reversed()))
            h.store.close()
        }
        do {
            let index = try DiskIndex(path: dir + "/index.db")
            for (key, value) in [("small", small), ("big", big)] {
                var row = try #require(try index.get(try CacheKey(key: key)))
                #expect(row.sum == ValueSum.of(value), "written striped")
                row.sum = .word(Int64(bitPattern: Checksum64.of(value)))
                try index.put(try CacheKey(key: key), row, accessedAt: 1)
            }
        }
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0 }
        defer { h.store.close() }
        #expect(try h.get("small")?.0.value == small && h.get("big")?.0.value == big)
        #expect(try streamed(h, "big", pieces: 1000) == big, "a Checksum64 row read in pieces")
        #expect(try streamed(h, "new", pieces: 1000) == Array(big.reversed()), "a striped row read in pieces")
        #expect(h.store.counters.damaged == 0)
        try DiskIndex(path: dir + "/index.db").db.exec("UPDATE entries SET checksum = checksum + 1 WHERE key = x'736d616c6c'")
        #expect(try h.get("small") == nil && h.store.counters.damaged == 1, "a wrong old sum is damage")
    }

    /// Reads `key` as a blob in pieces of at most `pieces` bytes (rounded to stripes); nil when it is damaged.
    private func streamed(_ h: StoreHarness, _ key: String, pieces: Int) throws -> [UInt8]? {
        let k = try CacheKey(key: key)
        let found = try h.wait { h.store.read(k, now: 1000, streamAbove: 65536, $0) }.get()
        guard case .blob(let blob)? = found?.0, case .success(let reader) = blob.open() else {
            Issue.record("\(key) is not a blob")
            return nil
        }
        var out: [UInt8] = []
        while reader.remaining > 0 {
            switch reader.next(max: pieces) {
            case .piece(let bytes, _): out += bytes
            case .damaged: return nil
            }
        }
        return out
    }
}
