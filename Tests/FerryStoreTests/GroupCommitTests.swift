import Foundation
import Testing
import FerryCache
@testable import FerryStore

/// Sets the journal does not take reach the disk worker together and commit in one transaction, in their order;
/// pending journaled sets are applied in the index's key order, which must be SQLite's.
@Suite struct GroupCommitTests {
    /// Five large sets issued in one loop iteration (one worker batch, one transaction), among them two of the same
    /// key and an `if_absent` one behind a set of its key: each answers as it would alone, and all stand after a
    /// restart.
    @Test func setsOfOneBatchAnswerInOrderAndAllStand() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let big = { (b: UInt8) in [UInt8](repeating: b, count: 70_000) }  // over the inline threshold: never journaled
        do {
            let h = try StoreHarness(dir: dir)
            let sets: [(String, UInt8, Bool)] = [("a", 1, false), ("b", 2, false), ("a", 3, false), ("a", 4, true), ("c", 5, true)]
            var answers: [Bool?] = Array(repeating: nil, count: sets.count)
            for (i, (key, byte, ifAbsent)) in sets.enumerated() {
                h.store.set(try CacheKey(key: key), value: big(byte), ttlMs: nil, ifAbsent: ifAbsent, now: 1000) { answers[i] = try? $0.get() }
            }
            h.run { answers.allSatisfy { $0 != nil } }
            #expect(answers == [true, true, true, false, true], "the if_absent set of \"a\" sees the sets before it")
            h.store.close()
        }
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0 }
        defer { h.store.close() }
        #expect(try h.get("a")?.0.value == big(3) && h.get("b")?.0.value == big(2) && h.get("c")?.0.value == big(5))
    }

    /// `StoreEngine.indexOrder` is the order SQLite keeps the rows in (namespace, then key, byte-wise), for keys that
    /// Swift's own `String <` would order otherwise (case, accents, prefixes, a namespace longer than another).
    @Test func theApplyOrderIsTheIndexOrder() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keys = try [("default", "b"), ("default", "B"), ("default", "é"), ("default", "e\u{301}"), ("default", "ab"),
                        ("default", "a"), ("defaults", "a"), ("d", "z"), ("default", "🙂"), ("default", "ﬀ"), ("default", "a\u{0}b")]
            .map { try CacheKey(namespace: $0.0, key: $0.1) }
        do {
            let h = try StoreHarness(dir: dir)
            for key in keys { #expect(try h.wait { h.store.set(key, value: [1], ttlMs: nil, ifAbsent: false, now: 1000, $0) }.get()) }
            h.store.close()
        }
        let index = try DiskIndex(path: dir + "/index.db")
        let stored = try index.select(where: "1", { _ throws(SQLiteError) in }, orderBy: "namespace, key", limit: 100).map(\.0)
        #expect(stored.count == keys.count)
        #expect(stored == keys.sorted(by: StoreEngine.indexOrder))
        #expect(stored != keys.sorted { ($0.namespace, $0.key) < ($1.namespace, $1.key) }, "Swift's String order differs here")
    }
}
