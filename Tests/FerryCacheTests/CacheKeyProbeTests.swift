import Testing
@testable import FerryCache

/// A probe finds what its key finds: same hash, same matches, same refusals, in a real `MemoryLRU`.
@Suite struct CacheKeyProbeTests {
    static func withProbe<R>(_ namespace: String?, _ key: String, _ body: (CacheKeyProbe?) -> R) -> R {
        let k = Array(key.utf8)
        return k.withUnsafeBytes { kb in
            guard let namespace else { return body(CacheKeyProbe(namespace: nil, key: kb)) }
            return Array(namespace.utf8).withUnsafeBytes { body(CacheKeyProbe(namespace: $0, key: kb)) }
        }
    }

    @Test func hashesAndMatchesAsItsKey() {
        let keys = ["a", "key:000000001234", "key:00000000123", String(repeating: "z", count: 1024), "café", "日本語のキー"]
        let namespaces: [String?] = [nil, "default", "app", "a.b_c-D9"]
        for key in keys {
            for namespace in namespaces {
                let stored = CacheKey(trusted: namespace ?? CacheKey.defaultNamespace, key)
                Self.withProbe(namespace, key) { probe -> Void in
                    guard let probe else { Issue.record("refused \(key) in \(namespace ?? "nil")"); return }
                    #expect(probe.digest == stored.digest, "\(key) \(namespace ?? "nil")")
                    #expect(probe.image == stored.image, "\(key) \(namespace ?? "nil")")
                    #expect(probe.matches(stored) && probe.cacheKey == stored)
                    // The key made from a probe carries the probe's digest (not hashed again): the stored key's.
                    #expect(probe.cacheKey.digest == stored.digest && probe.cacheKey.image == stored.image)
                    #expect(!probe.matches(CacheKey(trusted: "other", key)))
                    #expect(!probe.matches(CacheKey(trusted: stored.namespace, key + "x")))
                }
            }
        }
        #expect(CacheKey.defaultNamespaceBytes.elementsEqual(CacheKey.defaultNamespace.utf8))
    }

    /// A probe of bytes accepted before (`ReadBatch`) is the probe those bytes make: the same digest, image and
    /// matches, the default namespace named counted as none.
    @Test func anAcceptedProbeIsTheProbeOfItsBytes() {
        for namespace in [nil, "default", "app"] as [String?] {
            let stored = CacheKey(trusted: namespace ?? CacheKey.defaultNamespace, "key:000000001234")
            Self.withProbe(namespace, "key:000000001234") { probe in
                let probe = probe!
                let named = namespace.map { Array($0.utf8) }
                let checked = { (ns: UnsafeRawBufferPointer?) -> Bool in
                    let accepted = CacheKeyProbe(accepted: ns, key: probe.key, digest: probe.digest)
                    return accepted.digest == stored.digest && accepted.image == probe.image && accepted.matches(stored)
                        && (accepted.namespace == nil) == (namespace != "app")   // the default one, named or not: none
                }
                #expect(named.map { $0.withUnsafeBytes { checked($0) } } ?? checked(nil), "\(namespace ?? "nil")")
            }
        }
    }

    @Test func refusesWhatCacheKeyRefuses() {
        #expect(Self.withProbe(nil, "") { $0 == nil })
        #expect(Self.withProbe(nil, String(repeating: "k", count: 1025)) { $0 == nil })
        #expect(Self.withProbe(nil, String(repeating: "k", count: 1024)) { $0 != nil })
        #expect(Self.withProbe("a b", "k") { $0 == nil })
        #expect(Self.withProbe("", "k") { $0 == nil })
        #expect(Self.withProbe(String(repeating: "n", count: 129), "k") { $0 == nil })
        // Bytes that are not UTF-8 are not a key a String could hold as they are.
        let broken: [UInt8] = Array("key:0000".utf8) + [0xC3]
        #expect(broken.withUnsafeBytes { CacheKeyProbe(namespace: nil, key: $0) } == nil)
    }

    /// With and without images (`KeyImage`), for keys that have one and keys too long for one.
    @Test(arguments: [false, true], ["key:", String(repeating: "long-key/", count: 5)])
    func findsInTheMemoryTierWhatTheKeyFinds(images: Bool, prefix: String) {
        let lru = MemoryLRU<CacheKey, Int>(budget: 1 << 20, imageOf: images ? { $0.image } : nil, hashOf: { $0.digest })
        for i in 0..<500 { lru.set(CacheKey(trusted: i % 2 == 0 ? "default" : "odd", "\(prefix)\(i)"), i, cost: 10) }
        var found = 0
        for i in 0..<520 {
            Self.withProbe(i % 2 == 0 ? nil : "odd", "\(prefix)\(i)") { probe -> Void in
                let value = lru.get(hash: probe!.digest, image: probe!.image, where: probe!.matches)
                #expect(value == (i < 500 ? i : nil), "\(prefix)\(i)")
                if value != nil { found += 1 }
            }
        }
        #expect(found == 500)
        // The other namespace's key of the same name is not this one.
        #expect(Self.withProbe("odd", "\(prefix)0") { lru.get(hash: $0!.digest, image: $0!.image, where: $0!.matches) } == nil)
    }
}
