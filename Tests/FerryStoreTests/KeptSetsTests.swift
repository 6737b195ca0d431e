import Foundation
import Testing
import FerryCache
@testable import FerryStore

/// Journaled sets the memory tier keeps (`CacheStore+Journaled.swift`): a rewritten key reaches the worker once,
/// `applied_seq` never passes a kept value, and a failed write leaves the value before it in place.
@Suite struct KeptSetsTests {
    func appliedSeq(_ dir: String) throws -> UInt64 {
        try DiskIndex(path: dir + "/index.db", readOnly: true).appliedSeq()
    }

    func indexRows(_ dir: String) throws -> Int {
        try DiskIndex(path: dir + "/index.db", readOnly: true).totals(overheadPerRow: StoreConfig.diskOverheadPerEntry).rows
    }

    @Test func aRewrittenKeyReachesTheWorkerOnce() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.applyIntervalMs = 5_000 }
        let tier = try #require(h.store.journalTier)
        for i in 0..<300 { #expect(try h.set("hot", [UInt8(i & 255), 1])) }
        #expect(try h.set("cold", [5]))
        #expect(try h.get("absent") == nil, "a disk read, answered by the worker, needs nothing handed over")
        #expect(tier.recordsHandedOver == 0)
        #expect(try indexRows(dir) == 0)

        h.store.sweep(now: 1_000)   // the first sweep applies: everything kept is handed over first
        #expect(try h.get("absent") == nil)
        #expect(tier.recordsHandedOver == 2, "the newest value of each key, once")
        #expect(try indexRows(dir) == 2)
        #expect(try appliedSeq(dir) == 301, "every record written so far is in the index or superseded")
        #expect(h.store.counters.diskEntries == 2)
        h.store.close()

        let again = try StoreHarness(dir: dir) { $0.memoryBudget = 0 }
        defer { again.store.close() }
        #expect(try again.get("hot")?.0.value == [UInt8(299 & 255), 1])
        #expect(try again.get("cold")?.0.value == [5])
        #expect(again.store.notices.allSatisfy { !$0.hasPrefix("replayed") }, "\(again.store.notices)")
    }

    /// The worker applies what it was handed without waiting for the kept values (here: a pending set expired), and
    /// the index's `applied_seq` then stays below the oldest kept value, so a killed daemon's replay still has it.
    @Test func appliedSeqNeverPassesAKeptValue() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 4_096; $0.applyIntervalMs = 5_000 }
        defer { h.store.close() }
        h.store.sweep(now: 1_000)   // the first apply, so the next sweeps are not due
        let large = [UInt8](repeating: 7, count: 8_192)   // costlier than the memory budget: never kept
        #expect(try h.set("kept", [1], now: 1_000))                      // seq 1, kept in memory
        for i in 0..<20 { #expect(try h.set("big\(i)", large, now: 1_000)) }   // seq 2 … 21, handed over
        #expect(try h.set("brief", large, ttl: 10, now: 1_000))          // seq 22, handed over, expires at 1,010
        h.store.sweep(now: 2_000)   // not due, but a pending set expired: the worker applies what it has
        #expect(try h.get("absent", now: 2_000) == nil)
        #expect(try indexRows(dir) == 20, "the handed-over sets were applied (the expired one dropped)")
        #expect(try appliedSeq(dir) == 0, "below the kept value's seq 1: a replay after a kill would still set it")
        #expect(try h.get("kept", now: 2_000)?.1 == .memory)

        h.store.sweep(now: 7_000)   // due: the kept value is handed over and applied
        #expect(try h.get("absent", now: 7_000) == nil)
        #expect(try indexRows(dir) == 21)
        #expect(try appliedSeq(dir) == 22)
    }

    /// A set replacing a kept value whose record then fails to be written: the kept value is handed over, not lost.
    @Test func aFailedWriteLeavesTheValueBeforeIt() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.applyIntervalMs = 5_000 }
        defer { h.store.close() }
        let tier = try #require(h.store.journalTier)
        #expect(try h.set("k", [1]))   // written and kept
        let key = try CacheKey(key: "k")
        var result: Result<Bool, StoreError>?
        h.store.set(key, value: [2], ttlMs: nil, ifAbsent: false, now: 1_000) { result = $0 }
        tier.fullMode.set(true)        // the disk filled before the iteration's write
        h.run { result != nil }
        tier.fullMode.set(false)
        guard case .failure(.diskFull) = result else {
            Issue.record("the set should have failed: \(String(describing: result))")
            return
        }
        let now = try h.get("k")
        #expect(now?.0.value == [1], "the value before the failed set")
        #expect(now?.1 == .disk, "from the worker, which was handed the kept value")
        #expect(tier.recordsHandedOver == 1)
    }

    /// The same set sent twice in one iteration (same bytes, same millisecond): two records of one kept entry, counted
    /// once — a count left behind would grow the disk's totals (and hold back the journal) for good.
    @Test func theSameSetTwiceInOneIterationIsCountedOnce() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.applyIntervalMs = 5_000 }
        defer { h.store.close() }
        let key = try CacheKey(key: "twice")
        var done = 0
        for _ in 0..<2 { h.store.set(key, value: [4, 2], ttlMs: nil, ifAbsent: false, now: 1_000) { _ in done += 1 } }
        h.run { done == 2 }
        #expect(h.store.counters.diskEntries == 1)
        h.store.sweep(now: 1_000)   // the first sweep applies
        #expect(try h.get("absent") == nil)
        #expect(h.store.counters.diskEntries == 1)
        #expect(h.store.counters.diskBytes == StoreEngine.cost(key, size: 2))
        #expect(try appliedSeq(dir) == 2)
    }

    /// Kept values go to the worker in bounded batches: distinct keys whose kept values outgrow a hand-off's bytes
    /// are handed over without waiting for a job, so an apply never has more than a full disk's reserve can take.
    @Test func keptValuesAreHandedOverInBoundedBatches() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.applyIntervalMs = 5_000 }
        defer { h.store.close() }
        let tier = try #require(h.store.journalTier)
        let value = [UInt8](repeating: 9, count: 60 * 1024)
        for i in 0..<150 { #expect(try h.set("v\(i)", value)) }   // 9 MB of kept values
        #expect(try h.get("absent") == nil)
        #expect(tier.recordsHandedOver > 0, "handed over without any job asking")
        #expect(tier.recordsHandedOver < 150)
        #expect(h.store.counters.diskEntries == 150)
    }
}
