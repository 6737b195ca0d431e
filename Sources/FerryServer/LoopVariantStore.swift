import FerryCache
import FerryImages
import FerryLoop
import FerryStore

/// `VariantStoring` with the daemon's cache store, namespace `ferry.image-variants`: the request goes to the loop
/// thread (the store is the loop's), its completion back to the awaiting task. Variants are kept for
/// `ttlMs` (30 days) and, like every value, within the store's budgets (least recently used out first).
///
/// ```swift
/// let loader = ImageLoader(fetcher: …, decoder: …, variantStore: LoopVariantStore(store: store, post: mailbox.post), …)
/// ```
final class LoopVariantStore: VariantStoring, @unchecked Sendable {
    private let post: LoopPost
    /// Touched on the loop thread only.
    private unowned(unsafe) let store: CacheStore
    static let ttlMs: Int64 = 30 * 24 * 3600 * 1000
    /// The version last kept of each original (loop thread only): other versions' variants are looked for only when
    /// it changes (or was not seen since start), not at every variant kept. Bounded: forgotten whole past 10,000.
    private var keptVersions: [String: String] = [:]

    init(store: CacheStore, post: @escaping LoopPost) {
        self.store = store
        self.post = post
    }

    func variant(_ key: VariantKey) async -> StoredVariant? {
        await withCheckedContinuation { (continuation: CheckedContinuation<StoredVariant?, Never>) in
            post { [self] in
                store.get(CacheKey(trusted: VariantKey.namespace, key.storeKey), now: WallClock.nowMs()) { result in
                    guard case .success(let (entry, _)?) = result else { return continuation.resume(returning: nil) }
                    continuation.resume(returning: StoredVariant(encoded: entry.value))
                }
            }
        }
    }

    func keep(_ variant: StoredVariant, _ key: VariantKey) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            post { [self] in
                let now = WallClock.nowMs()
                store.set(CacheKey(trusted: VariantKey.namespace, key.storeKey), value: variant.encoded, ttlMs: LoopVariantStore.ttlMs,
                          ifAbsent: false, now: now) { _ in continuation.resume() }
                guard keptVersions[key.originalPrefix] != key.versionPrefix else { return }
                if keptVersions.count >= 10_000 { keptVersions.removeAll() }
                keptVersions[key.originalPrefix] = key.versionPrefix
                dropOtherVersions(of: key, now: now)
            }
        }
    }

    /// The variants of the original's other versions (its validator changed): listed by the original's prefix and
    /// deleted, a page at a time, in the background.
    private func dropOtherVersions(of key: VariantKey, now: Int64, after cursor: String? = nil) {
        store.list(namespace: VariantKey.namespace, prefix: key.originalPrefix, cursor: cursor, limit: 100, now: now) { [self] result in
            guard case .success(let page) = result else { return }
            for listed in page.keys where !listed.key.hasPrefix(key.versionPrefix) {
                store.delete(CacheKey(trusted: VariantKey.namespace, listed.key), now: now) { _ in }
            }
            if page.more, let last = page.keys.last { dropOtherVersions(of: key, now: now, after: last.key) }
        }
    }
}
