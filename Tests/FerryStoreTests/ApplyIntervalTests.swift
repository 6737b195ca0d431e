import Foundation
import Testing
import FerryCache
@testable import FerryStore

/// Journaled sets reach the SQLite index at `StoreConfig.applyIntervalMs`, not at every sweep; in between the sweep
/// runs with sets pending, and nothing it does loses or miscounts them.
@Suite struct ApplyIntervalTests {
    /// Rows in the index as another connection sees them (committed, WAL included), without asking the worker,
    /// whose other jobs would apply the pending sets first.
    func indexRows(_ dir: String) throws -> Int {
        let index = try DiskIndex(path: dir + "/index.db", readOnly: true)
        return try index.totals(overheadPerRow: StoreConfig.diskOverheadPerEntry).rows
    }

    /// A get of a key the memory tier does not hold (budget 0) is answered by the worker from its pending sets,
    /// after every job before it: the barrier that says the sweep before it has run.
    func barrier(_ h: StoreHarness, _ key: String, now: Int64) throws -> [UInt8]? {
        try h.get(key, now: now)?.0.value
    }

    @Test func pendingSetsReachTheIndexAtTheIntervalNotAtEverySweep() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0; $0.applyIntervalMs = 5_000 }
        defer { h.store.close() }
        for i in 0..<10 { #expect(try h.set("a\(i)", [UInt8(i)])) }
        h.store.sweep(now: 1_000)   // the first sweep applies
        #expect(try barrier(h, "a3", now: 1_000) == [3])
        #expect(try indexRows(dir) == 10)

        for i in 0..<10 { #expect(try h.set("b\(i)", [UInt8(i)], now: 1_500)) }
        #expect(try h.set("a3", [33], now: 1_500))
        h.store.sweep(now: 2_000)   // one second later: not due
        #expect(try barrier(h, "b7", now: 2_000) == [7], "answered from the pending sets")
        #expect(try barrier(h, "a3", now: 2_000) == [33], "the newer value, not the index's")
        #expect(try indexRows(dir) == 10, "the sweep left the pending sets pending")
        #expect(h.store.counters.diskEntries >= 20, "pending sets are counted (as new entries until applied)")

        h.store.sweep(now: 6_000)   // five seconds after the last apply
        #expect(try barrier(h, "b7", now: 6_000) == [7])
        #expect(try indexRows(dir) == 20)
        #expect(h.store.counters.diskEntries == 20, "exact again once applied")
    }

    @Test func aSweepBetweenAppliesExpiresRowsWithoutLosingNewerPendingValues() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0; $0.applyIntervalMs = 5_000 }
        defer { h.store.close() }
        #expect(try h.set("x", [1], ttl: 50, now: 1_000))
        #expect(try h.set("y", [2], ttl: 50, now: 1_000))
        h.store.sweep(now: 1_000)
        #expect(try barrier(h, "x", now: 1_000) == [1])
        #expect(try indexRows(dir) == 2)

        #expect(try h.set("x", [9], now: 1_500))   // pending, newer than the row that expires at 1,050
        h.store.sweep(now: 2_000)                 // not due: deletes both expired rows, x's value stays pending
        #expect(try barrier(h, "x", now: 2_000) == [9])
        #expect(try indexRows(dir) == 0)

        h.store.sweep(now: 7_000)
        #expect(try barrier(h, "x", now: 7_000) == [9])
        #expect(try barrier(h, "y", now: 7_000) == nil)
        #expect(try indexRows(dir) == 1)
        #expect(h.store.counters.diskEntries == 1, "the expired row was subtracted once, the pending set added once")
    }

    @Test func aPendingSetThatExpiredMakesTheSweepApply() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0; $0.applyIntervalMs = 5_000 }
        defer { h.store.close() }
        #expect(try h.set("t", [1], now: 1_000))   // no TTL: a row under the later, expiring set
        h.store.sweep(now: 1_000)
        #expect(try barrier(h, "t", now: 1_000) == [1])
        #expect(try h.set("t", [2], ttl: 100, now: 1_500))
        #expect(try h.set("u", [3], now: 1_500))
        h.store.sweep(now: 2_000)   // not due, but t's pending set expired at 1,600: applied, then swept
        #expect(try barrier(h, "t", now: 2_000) == nil, "neither the expired value nor the older row under it")
        #expect(try indexRows(dir) == 1, "u applied with it; t's row gone")
        #expect(h.store.counters.diskEntries == 1)
    }

    @Test func everySweepAppliesWhenTheIntervalIsZero() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0; $0.applyIntervalMs = 0 }
        defer { h.store.close() }
        for now in [Int64(1_000), 2_000, 3_000] {
            #expect(try h.set("k\(now)", [1], now: now))
            h.store.sweep(now: now)
            #expect(try barrier(h, "k\(now)", now: now) == [1])
            #expect(try indexRows(dir) == Int(now / 1_000))
        }
    }

    @Test func syncingAJournalThatIsGoneDoesNothing() {
        Journal.sync("/nonexistent-ferry-dir/journal.7")   // no crash, no file made
        #expect(!FileManager.default.fileExists(atPath: "/nonexistent-ferry-dir/journal.7"))
    }
}
