import Synchronization

/// A bounded memo of `CacheKeyURL.normalize`: URL as sent → its normalised form (or nil when it is not a cacheable
/// http(s) URL).
///
/// Why: a fetch normalises its URL three times (the argument check, the lookup key, the keys of its variants), and
/// the URLs a machine fetches repeat: 20 % of a fetch hit's time went to parsing the same URL (perf). Normalising
/// is a pure function of the string, so a remembered answer is the answer. Bounded by count and by the URLs'
/// length (long URLs are parsed every time); when full it starts over, which costs one parse per URL.
///
/// ```swift
/// NormalizedURLs.shared.normalize("HTTP://A.test")  // "http://a.test/", parsed once
/// ```
public final class NormalizedURLs: Sendable {
    public static let shared = NormalizedURLs(capacity: 4096, maxURLBytes: 512)

    let capacity: Int
    let maxURLBytes: Int
    private let memo = Mutex<[String: String?]>([:])

    init(capacity: Int, maxURLBytes: Int) {
        self.capacity = capacity
        self.maxURLBytes = maxURLBytes
    }

    /// `CacheKeyURL.parse(url)?.string`, remembered.
    public func normalize(_ url: String) -> String? {
        guard url.utf8.count <= maxURLBytes else { return CacheKeyURL.parse(url)?.string }
        if let known = memo.withLock({ $0[url] }) { return known }
        let normalized = CacheKeyURL.parse(url)?.string
        memo.withLock { m in
            if m.count >= capacity { m.removeAll(keepingCapacity: true) }
            m[url] = .some(normalized)
        }
        return normalized
    }

    /// URLs remembered now.
    var count: Int { memo.withLock { $0.count } }
}
