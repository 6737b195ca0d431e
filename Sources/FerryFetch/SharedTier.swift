import FerryHTTPCache

/// What of the HTTP cache a second tier shared by a fleet (Redis, issue 16) may hold, and for how long: a pure rule
/// over a storage key and its record's bytes.
///
/// Shared: a response stored in the shared cache (its record, or a `Vary` marker and its variants), with its body in
/// the record. Never: a credential or uid partition (the key names one), a kept partial body, a record whose body is
/// stored apart (a large body stays on the machine that fetched it, and its record alone would be a miss elsewhere).
/// The time to live is what the response is still worth now: its remaining freshness plus its `stale-while-revalidate`
/// and `stale-if-error` windows (RFC 5861), at least one second; a `Vary` marker lives a day (its variants expire on
/// their own).
///
/// ```swift
/// SharedTier.lifetimeMs(key: "GET https://a.test/x", record: bytes, now: nowSeconds)   // 60_000, or nil: keep local
/// ```
public enum SharedTier {
    public static let markerLifetimeMs: Int64 = 86_400_000

    public static func isShareable(key: String) -> Bool {
        key.hasPrefix("GET ") && !key.contains(" (partition ") && !key.hasSuffix("\u{0}partial") && !key.contains("\u{0}body\u{0}")
    }

    /// Milliseconds the record may live in the shared tier, or nil when it stays on this machine.
    public static func lifetimeMs(key: String, record: [UInt8], now: Int64) -> Int64? {
        guard isShareable(key: key), let decoded = StoredRecord.decode(record) else { return nil }
        switch decoded {
        case .varyMarker: return markerLifetimeMs
        case .response(_, .apart): return nil
        case .response(let response, .inline):
            let cc = response.cacheControl
            let left = freshnessLifetime(response: response, cacheControl: cc) - currentAge(stored: response, now: now)
            let windows = max(cc.staleWhileRevalidate ?? 0, cc.staleIfError ?? 0)
            let seconds = left + windows
            // A response only kept to be revalidated (an ETag, no freshness left) still saves its body on a 304.
            let validator = response.headers.contains("etag") || response.headers.contains("last-modified")
            guard seconds > 0 || validator else { return nil }
            return max(1, seconds > 0 ? seconds : 60) * 1000
        }
    }
}
