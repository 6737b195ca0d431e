import FerryCache
import FerryImageFormat

/// A decoded-size-aware image as the loader keeps it: the bytes, what sniffing found, and until when HTTP says it
/// may be used without asking the origin again.
struct CachedImage: Sendable {
    var bytes: ArraySlice<UInt8>
    /// What decoding found (once, when it was downloaded).
    var info: DecodedImage
    /// The URL the bytes came from (after redirects).
    var url: String
    /// Milliseconds since the epoch; past it the entry is not served (the fetch path revalidates instead).
    var freshUntilMs: Int64
    /// The version of the original (`FetchedImage.validator`, or a digest of its bytes); for variants, the
    /// original's.
    var validator: String = ""
}

/// The image loader's memory tier: least recently used out first, bounded by an exact byte budget *and* an entry
/// count, with no single entry above a tenth of the budget (such an image is still returned, just not kept). A
/// plain synchronous type: the `ImageLoader` actor owns it.
///
/// ```swift
/// var cache = ImageMemoryCache(budget: 128 << 20, maxEntries: 1000)
/// cache.insert(image, for: key)          // .stored, or .oversized (more than a tenth of the budget: not kept)
/// cache.image(for: key, nowMs: now)      // nil once stale
/// ```
struct ImageMemoryCache {
    enum Insertion: Equatable { case stored, oversized }

    private(set) var budget: Int
    private(set) var maxEntries: Int
    private let lru: MemoryLRU<String, CachedImage>
    private(set) var evictions = 0

    init(budget: Int, maxEntries: Int) {
        self.budget = budget
        self.maxEntries = max(1, maxEntries)
        lru = MemoryLRU(budget: budget)
    }

    var bytes: Int { lru.usedBytes }
    var count: Int { lru.count }
    /// The most one image may cost: a tenth of the budget.
    var maxEntryBytes: Int { budget / 10 }

    /// What an image costs: its bytes, its key and a fixed overhead.
    static func cost(_ image: CachedImage, key: String) -> Int { image.bytes.count + key.utf8.count + 128 }

    /// The image if present and still fresh (a stale one is dropped).
    mutating func image(for key: String, nowMs: Int64) -> CachedImage? {
        guard let image = lru.get(key) else { return nil }
        if image.freshUntilMs <= nowMs {
            lru.remove(key)
            return nil
        }
        return image
    }

    /// New bounds (a reload): least recently used images go until both hold.
    mutating func resize(budget newBudget: Int, maxEntries newMax: Int) {
        budget = newBudget
        maxEntries = max(1, newMax)
        evictions += lru.resize(budget: newBudget).count
        while lru.count > maxEntries, lru.removeLeastRecent() != nil { evictions += 1 }
    }

    mutating func insert(_ image: CachedImage, for key: String) -> Insertion {
        let cost = ImageMemoryCache.cost(image, key: key)
        guard cost <= maxEntryBytes else {
            lru.remove(key)  // an older, smaller version must not outlive the new one
            return .oversized
        }
        evictions += lru.set(key, image, cost: cost).filter { $0.key != key }.count
        while lru.count > maxEntries, lru.removeLeastRecent() != nil { evictions += 1 }
        return .stored
    }

    @discardableResult
    mutating func remove(_ key: String) -> Bool { lru.remove(key) != nil }

    /// Every key whose URL is `url` (an image may be stored once per set of request headers).
    func keys(forURL url: String) -> [String] {
        lru.keysLeastRecentFirst.filter { ImageKey.url(of: $0) == url }
    }

    /// The keys whose URL `matches`.
    func keys(where matches: (String) -> Bool) -> [String] {
        lru.keysLeastRecentFirst.filter { matches(ImageKey.url(of: $0)) }
    }
}
