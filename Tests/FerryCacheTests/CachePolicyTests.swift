import Testing
@testable import FerryCache

@Suite struct MemoryLRUTests {
    @Test func evictsLeastRecentlyUsedWithinTheByteBudget() {
        let lru = MemoryLRU<String, Int>(budget: 300)
        #expect(lru.set("a", 1, cost: 100).isEmpty)
        #expect(lru.set("b", 2, cost: 100).isEmpty)
        #expect(lru.set("c", 3, cost: 100).isEmpty)
        #expect(lru.get("a") == 1)  // a is now the most recent
        let evicted = lru.set("d", 4, cost: 150)
        #expect(evicted.map(\.key) == ["b", "c"], "least recent first, until the new entry fits")
        #expect(lru.usedBytes == 250)
        #expect(lru.keysLeastRecentFirst == ["a", "d"])
    }

    /// CLOCK: an entry used since it reached the old end gets a second chance (back to the new end, bit cleared),
    /// and goes at the next turn if it is not used again.
    @Test func anEntryUsedSinceItReachedTheOldEndGetsASecondChance() {
        let lru = MemoryLRU<String, Int>(budget: 300)
        for (k, v) in [("a", 1), ("b", 2), ("c", 3)] { lru.set(k, v, cost: 100) }
        #expect(lru.get("b") == 2)
        #expect(lru.set("d", 4, cost: 100).map(\.key) == ["a"])
        #expect(lru.set("e", 5, cost: 100).map(\.key) == ["c"], "b was used: c goes instead")
        #expect(lru.keysLeastRecentFirst == ["d", "b", "e"])
        #expect(lru.set("f", 6, cost: 100).map(\.key) == ["d"])
        #expect(lru.removeLeastRecent()?.key == "b", "its chance is spent")
        lru.set("e", 50, cost: 250)
        #expect(lru.count == 1 && lru.peek("e") == 50, "replacing spares the entry itself: f goes")
    }

    @Test func replacingAKeyReplacesItsCost() {
        let lru = MemoryLRU<String, Int>(budget: 100)
        lru.set("a", 1, cost: 60)
        lru.set("a", 2, cost: 30)
        #expect(lru.usedBytes == 30 && lru.count == 1 && lru.peek("a") == 2)
    }

    @Test func anEntryLargerThanTheBudgetIsNotStored() {
        let lru = MemoryLRU<String, Int>(budget: 100)
        lru.set("a", 1, cost: 50)
        let evicted = lru.set("a", 9, cost: 101)
        #expect(evicted.map(\.key) == ["a"])
        #expect(lru.count == 0 && lru.usedBytes == 0, "and the old value of the key is gone too")
    }

    @Test func budgetHoldsUnderRandomOperations() {
        let lru = MemoryLRU<Int, Int>(budget: 10_000)
        var model: [Int: Int] = [:]
        var rng = SystemRandomNumberGenerator()
        for step in 0..<20_000 {
            let k = Int.random(in: 0..<300, using: &rng)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0:
                let cost = Int.random(in: 1..<400, using: &rng)
                for e in lru.set(k, step, cost: cost) { model[e.key] = nil }
                if cost <= 10_000 { model[k] = cost }
            case 1:
                lru.remove(k)
                model[k] = nil
            default:
                _ = lru.get(k)
            }
            #expect(lru.usedBytes <= 10_000)
            #expect(lru.usedBytes == model.values.reduce(0, +))
            #expect(lru.count == model.count)
        }
    }

    @Test func removeAllVisitsFromTheLeastRecentEnd() {
        let lru = MemoryLRU<Int, Int>(budget: 1000)
        for k in 0..<10 { lru.set(k, k, cost: 1) }
        let removed = lru.removeAll(visiting: 5) { _, v in v % 2 == 0 }
        #expect(removed.map(\.key) == [0, 2, 4])
        #expect(lru.count == 7)
    }
}

@Suite struct CacheKeyTests {
    @Test func validation() throws {
        #expect(throws: CacheKey.Invalid.self) { try CacheKey(key: "") }
        #expect(throws: CacheKey.Invalid.self) { try CacheKey(key: String(repeating: "k", count: 1025)) }
        #expect(throws: Never.self) { try CacheKey(key: String(repeating: "k", count: 1024)) }
        #expect(throws: CacheKey.Invalid.self) { try CacheKey(namespace: "a b", key: "k") }
        #expect(throws: CacheKey.Invalid.self) { try CacheKey(namespace: "", key: "k") }
        #expect(try CacheKey(namespace: "build.v2_x-1", key: "é/ü").namespace == "build.v2_x-1")
    }

    @Test func keysAreComparedByBytes() throws {
        let composed = try CacheKey(key: "\u{e9}")
        let decomposed = try CacheKey(key: "e\u{301}")
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(try CacheKey(namespace: "a", key: "k") != CacheKey(namespace: "b", key: "k"))
    }

    @Test func expiry() {
        let e = CacheEntry(value: [1], createdAt: 100, expiresAt: 200)
        #expect(!e.isExpired(now: 199))
        #expect(e.isExpired(now: 200))
        #expect(!CacheEntry(value: [], createdAt: 0, expiresAt: nil).isExpired(now: .max))
    }
}


@Suite struct CacheKeyEqualityTests {
    @Test func keysAreEqualExactlyWhenTheirBytesAre() throws {
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 40] {
            let base = String(repeating: "k", count: n)
            #expect(try CacheKey(namespace: "ns", key: base + "x") == CacheKey(namespace: "ns", key: base + "x"))
            #expect(try CacheKey(namespace: "ns", key: base + "x") != CacheKey(namespace: "ns", key: base + "y"), "last byte differs, length \(n + 1)")
            #expect(try CacheKey(namespace: "ns", key: "y" + base) != CacheKey(namespace: "ns", key: "x" + base), "first byte differs")
            #expect(try CacheKey(namespace: "a", key: base + "x") != CacheKey(namespace: "b", key: base + "x"))
        }
        // Canonically equivalent but different bytes: different keys (String's == would merge them).
        #expect(try CacheKey(key: "caf\u{E9}") != CacheKey(key: "cafe\u{301}"))
        #expect(try CacheKey(key: "long key with an accent: caf\u{E9}") == CacheKey(key: "long key with an accent: caf\u{E9}"))
    }
}
