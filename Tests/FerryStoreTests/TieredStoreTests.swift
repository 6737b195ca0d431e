import Testing
import FerryCache
@testable import FerryStore

/// A tier the test answers by hand, counting what the memory tier asks of it.
final class CountingTier: StoreTier {
    var usage = TierUsage()
    private(set) var reads: [(CacheKey, (Result<CacheEntry?, StoreError>) -> Void)] = []
    private(set) var writes: [(CacheKey, CacheEntry, (Result<Bool, StoreError>) -> Void)] = []
    private(set) var removes = 0
    private(set) var iterations = 0
    /// Whether writes are settled at the end of the iteration (the disk's journal path).
    var settlesAtOnce = true
    var failNextSettle: StoreError?
    private var unsettled: [(Result<Bool, StoreError>) -> Void] = []
    weak var settledSets: SettledSets?

    func read(_ key: CacheKey, now: Int64, _ done: @escaping (Result<CacheEntry?, StoreError>) -> Void) { reads.append((key, done)) }
    func settlesAtOnce(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool) -> Bool { settlesAtOnce && !ifAbsent }
    func write(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool, now: Int64, settling: Bool,
               _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        writes.append((key, entry, done))
        if settling { unsettled.append(done) }
    }
    func writeSettling(_ set: consuming SettlingSet, _ entry: CacheEntry, now: Int64) {
        write(set.key, entry, ifAbsent: false, now: now, settling: true) { [weak self] result in
            var failure: StoreError?
            if case .failure(let error) = result { failure = error }
            self?.settledSets?.settled(set, failure: failure)
        }
    }
    func adopt(_ key: CacheKey, _ file: AdoptedFile, _ done: @escaping (Result<Bool, StoreError>) -> Void) { done(.success(true)) }
    func remove(_ key: CacheKey, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        removes += 1
        done(.success(false))
    }
    func retime(_ key: CacheKey, expiresAt: Int64?, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void) { done(.success(false)) }
    func list(namespace: String, prefix: String, cursor: String?, limit: Int, now: Int64,
              _ done: @escaping (Result<(keys: [ListedKey], more: Bool), StoreError>) -> Void) { done(.success(([], false))) }
    func clear(namespace: String, now: Int64, _ done: @escaping (Result<Int, StoreError>) -> Void) { done(.success(0)) }
    /// The keys each sweep recorded as read.
    private(set) var sweeps: [[CacheKey]] = []
    func sweep(now: Int64, accessed: [CacheKey]) { sweeps.append(accessed) }
    func endOfIteration(flushReplies: () -> Void) {
        iterations += 1
        let settling = unsettled
        unsettled.removeAll()
        let failure = failNextSettle
        failNextSettle = nil
        for done in settling { done(failure.map { .failure($0) } ?? .success(true)) }
        flushReplies()
    }
    func close() {}
}

@Suite struct TieredStoreTests {
    static func store(_ tier: CountingTier) -> CacheStore { CacheStore(config: StoreConfig(directory: "/nonexistent"), tier: tier) }

    static func get(_ store: CacheStore, _ key: CacheKey) -> (CacheEntry, CacheSource)?? {
        var out: (CacheEntry, CacheSource)??
        store.get(key, now: 1000) { out = try? $0.get() }
        return out
    }

    @Test func aSetSettledThisIterationIsReadFromMemoryAtOnceAndAcknowledgedAtItsEnd() throws {
        let tier = CountingTier()
        let store = Self.store(tier)
        let key = try CacheKey(key: "k")
        var acknowledged: Bool?
        store.set(key, value: [7], ttlMs: nil, ifAbsent: false, now: 1000) { acknowledged = try? $0.get() }
        #expect(acknowledged == nil, "not before the end of the iteration")
        #expect(Self.get(store, key)??.1 == .memory && tier.reads.isEmpty, "a memory hit never asks the tier")
        store.endOfIteration {}
        #expect(acknowledged == true && store.counters.sets == 1)
    }

    @Test func aSetTheTierFailsLeavesMemoryAgain() throws {
        let tier = CountingTier()
        let store = Self.store(tier)
        let key = try CacheKey(key: "k")
        var failed = false
        store.set(key, value: [7], ttlMs: nil, ifAbsent: false, now: 1000) { if case .failure = $0 { failed = true } }
        tier.failNextSettle = .diskFull("full")
        store.endOfIteration {}
        #expect(failed && store.counters.sets == 0)
        store.get(key, now: 1000) { _ in }
        #expect(tier.reads.count == 1, "gone from memory: the next get asks the tier")
    }

    @Test func aSetWaitingForTheTierIsVisibleOnlyOnceStored() throws {
        let tier = CountingTier()
        tier.settlesAtOnce = false
        let store = Self.store(tier)
        let key = try CacheKey(key: "big")
        store.set(key, value: [1, 2], ttlMs: nil, ifAbsent: false, now: 1000) { _ in }
        store.get(key, now: 1000) { _ in }
        #expect(tier.reads.count == 1, "not in memory before the tier stored it")
        tier.writes[0].2(.success(true))
        #expect(Self.get(store, key)??.1 == .memory)
    }

    @Test func aLateReadNeverReplacesANewerValueInMemory() throws {
        let tier = CountingTier()
        let store = Self.store(tier)
        let key = try CacheKey(key: "k")
        var read: [UInt8]?
        store.get(key, now: 1000) { read = (try? $0.get())??.0.value }
        store.set(key, value: [2], ttlMs: nil, ifAbsent: false, now: 1000) { _ in }
        store.endOfIteration {}
        tier.reads[0].1(.success(CacheEntry(value: [1], createdAt: 900, expiresAt: nil)))
        #expect(read == [1], "the read answers what the tier had")
        #expect(Self.get(store, key)??.0.value == [2], "but memory keeps the newer value")
    }

    @Test func countersJoinTheTiers() throws {
        let tier = CountingTier()
        tier.usage.bytes = 123
        tier.usage.entries = 4
        tier.usage.evictions = 5
        tier.usage.expirations = 6
        let store = Self.store(tier)
        let key = try CacheKey(key: "gone")
        store.set(key, value: [1], ttlMs: 1, ifAbsent: false, now: 1000) { _ in }
        store.endOfIteration {}
        store.sweep(now: 5000)
        let c = store.counters
        #expect(c.diskBytes == 123 && c.diskEntries == 4 && c.diskEvictions == 5)
        #expect(c.expirations == 7, "the tier's six and the memory tier's one")
    }

    /// Reads reach the disk tier's LRU order every `accessRecordIntervalMs`, each key once, none lost: the sweeps
    /// in between record nothing.
    @Test func readsAreRecordedInTheTiersOrderEveryIntervalAndNoneIsLost() throws {
        let tier = CountingTier()
        var config = StoreConfig(directory: "/nonexistent")
        config.accessRecordIntervalMs = 30_000
        let store = CacheStore(config: config, tier: tier)
        let a = try CacheKey(key: "a"), b = try CacheKey(key: "b")
        for key in [a, b] { store.set(key, value: [1], ttlMs: nil, ifAbsent: false, now: 1000) { _ in } }
        store.endOfIteration {}
        store.sweep(now: 1000)
        #expect(tier.sweeps.last == [], "nothing was read yet")
        _ = Self.get(store, a)
        _ = Self.get(store, a)
        store.sweep(now: 2000)
        #expect(tier.sweeps.last == [], "within the interval: not yet")
        _ = Self.get(store, b)
        store.sweep(now: 31_000)
        #expect(tier.sweeps.last.map(Set.init) == [a, b], "each key read once, the one read before the last sweep too")
        store.sweep(now: 62_000)
        #expect(tier.sweeps.last == [])
    }
}

@Suite struct CounterStoreTests {
    static func incr(_ store: CacheStore, _ key: CacheKey, by: Int64 = 1, into results: Box) {
        store.incr(key, by: by, ttlMs: nil, now: 1000) { results.values.append((try? $0.get()) ?? .notAnInteger) }
    }

    final class Box { var values: [CounterOutcome] = [] }

    @Test func incrementsOfOneKeyRunOneAfterTheOtherSoNoneIsLost() throws {
        let tier = CountingTier()
        let store = TieredStoreTests.store(tier)
        let key = try CacheKey(key: "hits")
        let results = Box()
        Self.incr(store, key, into: results)
        Self.incr(store, key, by: 10, into: results)
        #expect(tier.reads.count == 1, "the second waits for the first instead of reading the same old value")
        tier.reads[0].1(.success(CacheEntry(value: Array("5".utf8), createdAt: 900, expiresAt: 90_000)))
        #expect(tier.writes.count == 1 && tier.writes[0].1.value == Array("6".utf8))
        #expect(tier.writes[0].1.expiresAt == 90_000, "an existing counter keeps its expiry")
        store.endOfIteration {}
        #expect(results.values == [.value(6)])
        #expect(tier.writes.count == 2 && tier.writes[1].1.value == Array("16".utf8), "read from memory: the first's sum")
        store.endOfIteration {}
        #expect(results.values == [.value(6), .value(16)])
        #expect(tier.reads.count == 1)
    }

    @Test func aSetDuringTheReadMakesItReadAgain() throws {
        let tier = CountingTier()
        let store = TieredStoreTests.store(tier)
        let key = try CacheKey(key: "hits")
        let results = Box()
        Self.incr(store, key, into: results)
        store.set(key, value: Array("100".utf8), ttlMs: nil, ifAbsent: false, now: 1000) { _ in }
        store.endOfIteration {}
        tier.reads[0].1(.success(CacheEntry(value: Array("5".utf8), createdAt: 900, expiresAt: nil)))
        #expect(tier.writes.last?.1.value == Array("101".utf8), "the stale read of 5 was not used")
        store.endOfIteration {}
        #expect(results.values == [.value(101)])
    }

    @Test func aValueThatIsNoIntegerOrWouldOverflowIsLeftAsItWas() throws {
        let tier = CountingTier()
        let store = TieredStoreTests.store(tier)
        let word = try CacheKey(key: "word"), big = try CacheKey(key: "big")
        store.set(word, value: Array("hello".utf8), ttlMs: nil, ifAbsent: false, now: 1000) { _ in }
        store.set(big, value: CounterValue.bytes(Int64.max), ttlMs: nil, ifAbsent: false, now: 1000) { _ in }
        store.endOfIteration {}
        let writes = tier.writes.count
        let results = Box()
        Self.incr(store, word, into: results)
        Self.incr(store, big, into: results)
        Self.incr(store, big, by: -1, into: results)
        #expect(results.values == [.notAnInteger, .overflow])
        #expect(tier.writes.count == writes + 1, "only the decrement writes")
        store.endOfIteration {}
        #expect(results.values == [.notAnInteger, .overflow, .value(Int64.max - 1)])
    }

    @Test func aMissingKeyCountsFromZeroWithTheGivenTTL() throws {
        let tier = CountingTier()
        let store = TieredStoreTests.store(tier)
        let key = try CacheKey(key: "new")
        var got: CounterOutcome?
        store.incr(key, by: -3, ttlMs: 5000, now: 1000) { got = try? $0.get() }
        tier.reads[0].1(.success(nil))
        store.endOfIteration {}
        #expect(got == .value(-3) && tier.writes.last?.1.expiresAt == 6000)
    }
}
