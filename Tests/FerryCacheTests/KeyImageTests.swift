import Testing
@testable import FerryCache

/// `KeyImage`: one image per key, none past its capacity, and a `MemoryLRU` that compares images instead of keys.
@Suite struct KeyImageTests {
    static func image(_ namespace: String?, _ key: String) -> KeyImage {
        CacheKey(trusted: namespace ?? CacheKey.defaultNamespace, key).image
    }

    @Test func sameKeySameImageAndNoOther() {
        #expect(Self.image(nil, "user:1") == Self.image("default", "user:1"))
        #expect(Self.image(nil, "user:1") != Self.image("app", "user:1"))
        #expect(Self.image(nil, "user:1") != Self.image(nil, "user:2"))
        // The lengths are part of the image: the same bytes split another way are another key.
        #expect(Self.image("ab", "c") != Self.image("a", "bc"))
        #expect(Self.image(nil, "a") != Self.image(nil, "a\u{0}"))
        #expect(Self.image(nil, "é") != Self.image(nil, "e\u{301}"))
        #expect(CacheKey(trusted: "", "user:1").image.isNone, "no namespace is not the default namespace")
    }

    @Test func noImagePastTheCapacity() {
        let fits = String(repeating: "k", count: KeyImage.capacity)
        #expect(!Self.image(nil, fits).isNone)
        #expect(Self.image(nil, fits + "k").isNone)
        #expect(!Self.image("ns", String(fits.dropFirst(2))).isNone)
        #expect(Self.image("ns", String(fits.dropFirst(1))).isNone)
        // Keys with no image are never the same as a key with one.
        #expect(KeyImage.decide(stored: .none, probe: Self.image(nil, "k")) == false)
        #expect(KeyImage.decide(stored: .none, probe: .none) == nil)
        #expect(KeyImage.decide(stored: Self.image(nil, "k"), probe: Self.image(nil, "k")) == true)
    }

    /// A key that counts its comparisons and hashes as its owner says (collisions on purpose).
    struct CountedKey: Hashable {
        final class Counter { var compares = 0, hashes = 0 }
        let name: String
        let hash: Int
        let counter: Counter
        static func == (a: CountedKey, b: CountedKey) -> Bool {
            a.counter.compares += 1
            return a.name == b.name
        }
        func hash(into h: inout Hasher) {
            counter.hashes += 1
            h.combine(hash)
        }
        var image: KeyImage { CacheKey(trusted: CacheKey.defaultNamespace, name).image }
    }

    @Test func lookupsCompareImagesNotKeys() {
        let counter = CountedKey.Counter()
        let lru = MemoryLRU<CountedKey, Int>(budget: 1 << 20, imageOf: { $0.image })
        // Every key in one bucket run: each probe passes over the others.
        let short = (0..<20).map { CountedKey(name: "key:\($0)", hash: 7, counter: counter) }
        for (i, k) in short.enumerated() { lru.set(k, i, cost: 1) }
        for (i, k) in short.enumerated() { #expect(lru.get(k) == i) }
        #expect(lru.get(CountedKey(name: "key:99", hash: 7, counter: counter)) == nil)
        #expect(lru.remove(short[3]) == 3)
        #expect(lru.get(short[3]) == nil && lru.get(short[4]) == 4)
        #expect(counter.compares == 0)

        // Keys too long for an image are compared, and only with others that have none.
        let long = (0..<5).map { CountedKey(name: String(repeating: "x", count: 40) + "\($0)", hash: 7, counter: counter) }
        for (i, k) in long.enumerated() { lru.set(k, 100 + i, cost: 1) }
        for (i, k) in long.enumerated() { #expect(lru.get(k) == 100 + i) }
        #expect(counter.compares > 0)
        #expect(counter.compares <= 5 * 5 * 2)
        for (i, k) in short.enumerated() where i != 3 { #expect(lru.get(k) == i) }
    }

    @Test func withoutImagesKeysAreCompared() {
        let counter = CountedKey.Counter()
        let lru = MemoryLRU<CountedKey, Int>(budget: 1 << 20)
        let keys = (0..<10).map { CountedKey(name: "key:\($0)", hash: $0, counter: counter) }
        for (i, k) in keys.enumerated() { lru.set(k, i, cost: 1) }
        for (i, k) in keys.enumerated() {
            // A probe's image is ignored by a map that keeps none.
            #expect(lru.get(hash: k.hashValue, image: k.image, where: { $0 == k }) == i)
        }
        #expect(counter.compares >= 10)
    }

    /// A map told each key's hash (`hashOf`, as the store passes `CacheKey.digest`) files keys under it and never
    /// hashes a key itself; without it, every lookup does.
    @Test func aGivenHashIsUsedAndTheKeyIsNeverHashed() {
        let counter = CountedKey.Counter()
        let lru = MemoryLRU<CountedKey, Int>(budget: 1 << 20, imageOf: { $0.image }, hashOf: { $0.hash })
        let keys = (0..<50).map { CountedKey(name: "key:\($0)", hash: $0 % 7, counter: counter) }
        for (i, k) in keys.enumerated() { lru.set(k, i, cost: 1) }
        for (i, k) in keys.enumerated() { #expect(lru.get(k) == i) }
        #expect(lru.get(hash: keys[9].hash, image: keys[9].image, where: { $0 == keys[9] }) == 9)
        // Filed under the given hash: a probe asking under another finds nothing.
        #expect(lru.get(hash: keys[9].hash + 1, image: keys[9].image, where: { $0 == keys[9] }) == nil)
        #expect(lru.markDirty(keys[2], seq: 1, holding: { _ in true }) == .marked)
        #expect(lru.remove(keys[3]) == 3 && lru.get(keys[3]) == nil)
        lru.set(keys[4], 40, cost: 1)
        #expect(lru.get(keys[4]) == 40)
        #expect(counter.hashes == 0)

        let plain = MemoryLRU<CountedKey, Int>(budget: 1 << 20, imageOf: { $0.image })
        plain.set(keys[0], 0, cost: 1)
        #expect(plain.get(keys[0]) == 0)
        #expect(counter.hashes > 0)
    }

    /// A key's digest depends on its bytes alone, is what it hashes, and tells the parts apart.
    @Test func aKeysDigestIsItsBytes() {
        let a = CacheKey(trusted: "default", "user:1"), b = try! CacheKey(key: "user:" + "1")
        #expect(a.digest == b.digest && a.hashValue == b.hashValue)
        #expect(Set([a, b, CacheKey(trusted: "app", "user:1")]).count == 2)
        #expect(CacheKey(trusted: "ab", "c").digest != CacheKey(trusted: "a", "bc").digest)
        #expect(CacheKey(trusted: "default", "user:1").digest != CacheKey(trusted: "default", "user:2").digest)
    }
}
