import Testing
import FerryCache
@testable import FerryStore

/// `PendingKey`: the worker's table of pending sets finds a key by its image, and keys too long for one by `==`.
@Suite struct PendingKeyTests {
    @Test func findsEachKeyAndNoOther() {
        let long = String(repeating: "k", count: KeyImage.capacity)
        var keys: [CacheKey] = []
        for ns in ["default", "app"] {
            for i in 0..<200 { keys.append(CacheKey(trusted: ns, "key:\(i)")); keys.append(CacheKey(trusted: ns, long + "\(i)")) }
        }
        var pending: [PendingKey: Int] = [:]
        for (i, k) in keys.enumerated() { pending[PendingKey(k)] = i }
        #expect(pending.count == keys.count)
        for (i, k) in keys.enumerated() {
            // A key made anew (its own storage) finds the entry.
            #expect(pending[PendingKey(CacheKey(trusted: String(k.namespace), String(k.key)))] == i)
        }
        #expect(pending[PendingKey(CacheKey(trusted: "other", "key:1"))] == nil)
        #expect(pending[PendingKey(CacheKey(trusted: "default", long))] == nil)
        // A replacement keeps one entry per key.
        pending[PendingKey(CacheKey(trusted: "default", "key:7"))] = -1
        #expect(pending.count == keys.count && pending[PendingKey(keys[14])] == -1)
        #expect(PendingKey(keys[1]).image.isNone && !PendingKey(keys[0]).image.isNone)
    }
}
