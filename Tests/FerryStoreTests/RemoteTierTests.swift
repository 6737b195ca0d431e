import Testing
import FerryCache
@testable import FerryStore

/// The store with a tier shared by other machines (`RemoteTier`), answered by hand: asked after a local miss of a
/// shared key only, what it answers kept locally unless the key changed meanwhile, told of every change, deciding
/// `ifAbsent` for the fleet, and never told of what another machine changed (`dropLocal`, `clearLocal`).
@Suite struct RemoteTierTests {
    final class CountingRemote: RemoteTier {
        var reads: [(CacheKey, (CacheEntry?) -> Void)] = []
        var writes: [(key: CacheKey, entry: CacheEntry, ifAbsent: Bool, done: (Bool?) -> Void)] = []
        var removed: [CacheKey] = [], retimed: [(CacheKey, Int64?)] = [], cleared: [String] = []

        func shares(_ key: CacheKey) -> Bool { key.namespace == "shared" }
        func shares(namespace: String) -> Bool { namespace == "shared" }
        func read(_ key: CacheKey, now: Int64, _ done: @escaping (CacheEntry?) -> Void) { reads.append((key, done)) }
        func write(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool, now: Int64, _ done: @escaping (Bool?) -> Void) {
            writes.append((key, entry, ifAbsent, done))
        }
        func removed(_ key: CacheKey) { removed.append(key) }
        func retimed(_ key: CacheKey, expiresAt: Int64?, now: Int64) { retimed.append((key, expiresAt)) }
        func cleared(namespace: String, now: Int64) { cleared.append(namespace) }
    }

    func rig() -> (CacheStore, CountingTier, CountingRemote) {
        let tier = CountingTier(), remote = CountingRemote()
        let store = TieredStoreTests.store(tier)
        store.remote = remote
        return (store, tier, remote)
    }

    let shared = CacheKey(trusted: "shared", "k")
    let local = CacheKey(trusted: "local", "k")

    @Test func aLocalMissOfASharedKeyAsksTheFleetAndKeepsTheAnswer() {
        let (store, tier, remote) = rig()
        var got: (CacheEntry, CacheSource)??
        store.get(shared, now: 1000) { got = try? $0.get() }
        tier.reads[0].1(.success(nil))
        #expect(remote.reads.count == 1 && got == nil, "asked after the disk missed")
        remote.reads[0].1(CacheEntry(value: [9], createdAt: 900, expiresAt: nil))
        #expect(got??.1 == .fleet && got??.0.value == [9] && store.counters.fleetHits == 1)
        #expect(tier.writes.count == 1, "kept on disk too")
        store.get(shared, now: 1000) { got = try? $0.get() }
        #expect(got??.1 == .memory && remote.reads.count == 1)

        store.get(local, now: 1000) { _ in }
        tier.reads[1].1(.success(nil))
        #expect(remote.reads.count == 1, "a namespace not shared never asks")
    }

    @Test func anAnswerForAKeyChangedMeanwhileIsServedButNotKept() {
        let (store, tier, remote) = rig()
        store.get(shared, now: 1000) { _ in }
        tier.reads[0].1(.success(nil))
        store.set(shared, value: [2], ttlMs: nil, ifAbsent: false, now: 1001) { _ in }
        remote.reads[0].1(CacheEntry(value: [1], createdAt: 900, expiresAt: nil))
        var got: (CacheEntry, CacheSource)??
        store.get(shared, now: 1002) { got = try? $0.get() }
        #expect(got??.0.value == [2], "the newer set stays")
    }

    @Test func changesAreToldAndIfAbsentIsTheFleetsDecision() {
        let (store, _, remote) = rig()
        store.set(shared, value: [1], ttlMs: 5000, ifAbsent: false, now: 1000) { _ in }
        #expect(remote.writes.count == 1 && remote.writes[0].entry.expiresAt == 6000 && !remote.writes[0].ifAbsent)
        var answer: Bool?
        let other = CacheKey(trusted: "shared", "lock")
        store.set(other, value: [1], ttlMs: nil, ifAbsent: true, now: 1000) { answer = try? $0.get() }
        #expect(answer == nil && remote.writes[1].ifAbsent)
        remote.writes[1].done(false)
        #expect(answer == false, "another machine holds it")
        store.delete(shared, now: 1000) { _ in }
        store.touch(shared, ttlMs: 10, now: 1000) { _ in }
        store.clear(namespace: "shared", now: 1000) { _ in }
        #expect(remote.removed == [shared] && remote.retimed.count == 1 && remote.cleared == ["shared"])
        store.dropLocal(shared, now: 1000)
        store.clearLocal(namespace: "shared", now: 1000)
        store.set(local, value: [1], ttlMs: nil, ifAbsent: false, now: 1000) { _ in }
        #expect(remote.removed.count == 1 && remote.cleared.count == 1 && remote.writes.count == 2, "nothing told back")
    }
}
