import Testing
@testable import FerryCache

/// `MemoryLRU+Prefetch` asks the injected hint for the right lines: the key's home bucket, then the lines of the slot
/// that holds it, and no slot for a key it does not hold.
@Suite struct MemoryLRUPrefetchTests {
    /// Counts the addresses it is asked for (a C function pointer captures nothing: a static list; this suite's
    /// one test is the only one that uses it).
    enum CountingPrefetch {
        nonisolated(unsafe) static var asked: [UnsafeRawPointer] = []
    }

    @Test func asksForTheBucketThenTheSlotOfTheKey() {
        let lru = MemoryLRU<CacheKey, Int>(budget: 1 << 20, imageOf: { $0.image }, hashOf: { $0.digest },
                                           prefetch: { CountingPrefetch.asked.append($0!) })
        let keys = (0..<100).map { CacheKey(trusted: "default", "key:\($0)") }
        for (i, key) in keys.enumerated() { lru.set(key, i, cost: 10) }
        for key in keys {
            CountingPrefetch.asked.removeAll()
            lru.prefetchBucket(hash: key.digest)
            #expect(CountingPrefetch.asked.count == 1)
            let home = lru.index.withHomeBucket(hash: key.digest) { $0 }
            #expect(CountingPrefetch.asked.first == home)
            CountingPrefetch.asked.removeAll()
            lru.prefetchSlot(hash: key.digest)
            let slot = lru.index.find(hash: key.digest) { lru.slots[$0].key == key }!
            let start = lru.slots.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress! + slot) }
            #expect(CountingPrefetch.asked == [start, start + 64], "the slot holding \(key.key), both its first lines")
        }
        // A key not held: its bucket may be asked for, no slot is (unless another key shares its 32 bits).
        CountingPrefetch.asked.removeAll()
        lru.prefetchSlot(hash: CacheKey(trusted: "default", "absent").digest)
        #expect(CountingPrefetch.asked.isEmpty)
    }
}

/// `CacheStore.prefetchValue` reads a value's storage address as the first word of the slot's `CacheEntry?`: the
/// layout it counts on (the array declared first, one reference, its bytes 32 bytes in) is checked here, so that a
/// change of it fails a test instead of turning the hint into a useless one.
@Suite struct ValueFieldLayoutTests {
    @Test func theFirstWordOfAnEntryIsItsValuesStorage() {
        let lru = MemoryLRU<CacheKey, CacheEntry>(budget: 1 << 20, imageOf: { $0.image }, hashOf: { $0.digest },
                                                  prefetch: { _ in })
        let key = CacheKey(trusted: "default", "key:1")
        lru.set(key, CacheEntry(value: Array(repeating: 7, count: 100), createdAt: 1, expiresAt: 2), cost: 100)
        var storage: UnsafeRawPointer?
        lru.withFirstValueField(hash: key.digest) { storage = $0.load(as: UnsafeRawPointer?.self) }
        let bytes = lru.peek(key)!.value.withUnsafeBytes { $0.baseAddress! }
        #expect(storage != nil && storage! + 32 == bytes, "the storage's header, then the bytes")
    }
}

/// A slot of Ferry's memory tier stays 144 bytes, its image, value and flags in its first 80 (two cache lines at
/// most, wherever the slot starts): the stamp (`SlotHint`) lies in the room the flags leave, not in a word of its own.
@Suite struct SlotLayoutTests {
    typealias Slot = MemoryLRU<CacheKey, CacheEntry>.Slot

    @Test func theStampAddsNoBytes() {
        #expect(MemoryLayout<Slot>.stride == 144)
        #expect(MemoryLayout<Slot>.offset(of: \Slot.stamp)! < MemoryLayout<Slot>.offset(of: \Slot.key)!)
        #expect(MemoryLayout<Slot>.offset(of: \Slot.referenced)! < 80)
    }
}
