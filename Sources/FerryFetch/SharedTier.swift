import FerryHTTPCache

/// What of the HTTP cache a second tier shared by a fleet (Redis, issue 16) may hold, and for how long: a pure rule
/// over a storage key and its record's bytes.
///
/// Shared: a response stored in the shared cache (its record, or a `Vary` marker and its variants), with its body in
/// the record or stored apart (`sharing`'s `bodyApart`: the tier writes that body first, when it is small enough to share, and
/// the record only then: a record alone would be a miss elsewhere). Never: a kept partial body; a credential or uid
/// partition (the key names one) only when the fleet shares one partition secret and says so (`partitions`).
/// The time to live is what the response is still worth now: its remaining freshness plus its `stale-while-revalidate`
/// and `stale-if-error` windows (RFC 5861), at least one second; a `Vary` marker lives a day (its variants expire on
/// their own).
///
/// ```swift
/// SharedTier.lifetimeMs(key: "GET https://a.test/x", record: bytes, now: nowSeconds)   // 60_000, or nil: keep local
/// SharedTier.sharing(key: "GET https://a.test/x", record: bytes, now: nowSeconds)     // the same, and its body apart
/// ```
public enum SharedTier {
    public static let markerLifetimeMs: Int64 = 86_400_000

    public static func isShareable(key: String, partitions: Bool = false) -> Bool {
        key.hasPrefix("GET ") && (partitions || !key.contains(" (partition ")) && !key.hasSuffix("\u{0}partial")
            && !key.contains("\u{0}body\u{0}")
    }

    /// A body stored apart from its record (`<record key> NUL body NUL <random>`).
    public static func isBody(key: String) -> Bool { key.hasPrefix("GET ") && key.contains("\u{0}body\u{0}") }

    /// Milliseconds the record may live in the shared tier, or nil when it stays on this machine.
    public static func lifetimeMs(key: String, record: [UInt8], now: Int64, partitions: Bool = false) -> Int64? {
        sharing(key: key, record: record, now: now, partitions: partitions)?.lifetimeMs
    }

    /// `lifetimeMs`, with the body the record points at when it is stored apart (its storage key and size), from
    /// one decoding of the record; nil when the record stays on this machine.
    public static func sharing(key: String, record: [UInt8], now: Int64, partitions: Bool = false)
        -> (lifetimeMs: Int64, bodyApart: (key: String, size: Int)?)? {
        guard isShareable(key: key, partitions: partitions), let decoded = StoredRecord.decode(record) else { return nil }
        switch decoded {
        case .varyMarker: return (markerLifetimeMs, nil)
        case .response(let response, let body):
            let cc = response.cacheControl
            let left = freshnessLifetime(response: response, cacheControl: cc) - currentAge(stored: response, now: now)
            let windows = max(cc.staleWhileRevalidate ?? 0, cc.staleIfError ?? 0)
            let seconds = left + windows
            // A response only kept to be revalidated (an ETag, no freshness left) still saves its body on a 304.
            let validator = response.headers.contains("etag") || response.headers.contains("last-modified")
            guard seconds > 0 || validator else { return nil }
            var apart: (key: String, size: Int)?
            if case .apart(let key, let size) = body { apart = (key, size) }
            return (max(1, seconds > 0 ? seconds : 60) * 1000, apart)
        }
    }
}
