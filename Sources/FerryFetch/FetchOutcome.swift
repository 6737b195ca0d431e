import FerryHTTPCache
import FerryProtocol

/// What a fetch answered, typed: the response as it is served (from the store, or from the origin), where it came
/// from, and how long it stays fresh. The `fetch` operation writes it as the client's JSON; the image loader reads
/// its freshness and cache status directly.
///
/// ```swift
/// let job = FetchJob(engine: engine, spec: spec) { result in
///     guard case .success(let outcome) = result else { return }
///     outcome.cache.servedFromStore   // true for hit, stale, revalidated
///     outcome.freshForSeconds         // > 0: may be reused that long without asking the origin
/// }
/// ```
public struct FetchOutcome {
    public var status: Int
    /// As served: decoded-body headers, `Age` for a stored response.
    public var headers: HTTPFields
    /// In memory (a slice of the stored record or of the transfer's buffer), still arriving (`.spool`: the reply
    /// follows it and fails if the transfer does), or in the store's file; empty for HEAD.
    public var body: FetchBody
    /// The URL of this response, after `redirects` redirects.
    public var url: String
    public var redirects: Int
    public var cache: CacheStatus
    public var ageSeconds: Int64
    /// This fetch in the daemon, redirects included.
    public var totalMs: Int64
    /// The last exchange with the origin, when there was one.
    public var origin: OriginTiming?
    /// When it was served, in seconds since the epoch (what `freshForSeconds` counts from).
    public var servedAtSeconds: Int64

    /// The freshness lifetime left (RFC 9111 §4.2, from the served headers); 0 or less: reuse needs validation.
    /// Worked out when asked (the image loader asks; a `fetch` reply does not, and a cache hit is spared it).
    public var freshForSeconds: Int64 { FetchOutcome.freshFor(status: status, headers: headers, now: servedAtSeconds) }

    /// The freshness left of a response served now with these headers: its lifetime minus its `Age`.
    static func freshFor(status: Int, headers: HTTPFields, now: Int64) -> Int64 {
        let served = StoredResponse(status: status, headers: headers, requestTime: now, responseTime: now)
        return freshnessLifetime(response: served) - (ageValue(headers) ?? 0)
    }
}
