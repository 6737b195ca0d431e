// Freshness lifetime and age (RFC 9111 §4.2). All times are Unix seconds.

/// Where a freshness lifetime came from.
///
/// ```swift
/// freshness(status: 200, headers: ["Expires": "0"], responseTime: 0).source  // .expires
/// ```
public enum FreshnessSource: String, Sendable, Equatable {
    case sMaxAge = "s-maxage"
    case maxAge = "max-age"
    case expires
    case heuristic
    /// No explicit expiry and no heuristic allowed: lifetime 0.
    case none
}

/// Status codes that are heuristically cacheable (RFC 9110 §15.1).
///
/// ```swift
/// isHeuristicallyCacheable(status: 404)  // true
/// isHeuristicallyCacheable(status: 302)  // false
/// ```
public func isHeuristicallyCacheable(status: Int) -> Bool {
    switch status {
    case 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501: return true
    default: return false
    }
}

/// Heuristic lifetimes never exceed one week, however old `Last-Modified` is: the RFC sets no bound, and a
/// decade-old file would otherwise stay unchecked for a year.
///
/// ```swift
/// heuristicLifetimeCap  // 604800
/// ```
public let heuristicLifetimeCap: Int64 = 7 * 86_400

/// The freshness lifetime of a response and its source (RFC 9111 §4.2.1), first match wins:
/// 1. `s-maxage` (shared caches only); invalid → 0;
/// 2. `max-age`; invalid → 0;
/// 3. `Expires` − `Date` (the first line of each; `Date` missing or invalid → `responseTime`); an invalid
///    `Expires` such as `0` means already expired (RFC 9111 §5.3) → 0;
/// 4. heuristic, only without any of the above and only for a heuristically cacheable status or a `public`
///    response (§4.2.2): 10% of `Date` − `Last-Modified`, capped by `heuristicLifetimeCap`; no valid
///    `Last-Modified` → 0.
///
/// ```swift
/// freshness(status: 200, headers: ["Cache-Control": "s-maxage=5, max-age=60"], responseTime: 0)
/// // (lifetime: 5, source: .sMaxAge)
/// ```
public func freshness(
    status: Int, headers: HTTPFields, responseTime: Int64, sharedCache: Bool = true, cacheControl: CacheControl? = nil
) -> (lifetime: Int64, source: FreshnessSource) {
    // `cacheControl`: the response's, when the caller parsed it already (a cache hit parses it once).
    let cc = cacheControl ?? CacheControl(responseHeaders: headers)
    if sharedCache, let s = cc.sMaxAge { return (s, .sMaxAge) }
    if let m = cc.maxAge { return (m, .maxAge) }
    let date = dateValue(headers, responseTime: responseTime)
    if let expiresLine = headers.first("expires") {
        guard let expires = HTTPDate.parse(expiresLine, now: responseTime) else { return (0, .expires) }
        return (max(0, expires - date), .expires)
    }
    guard isHeuristicallyCacheable(status: status) || cc.isPublic else { return (0, .none) }
    guard let lmLine = headers.first("last-modified"), let lm = HTTPDate.parse(lmLine, now: responseTime), lm < date
    else { return (0, .none) }
    return (min((date - lm) / 10, heuristicLifetimeCap), .heuristic)
}

/// The freshness lifetime of a stored response, in seconds (see `freshness(status:headers:responseTime:)`).
///
/// ```swift
/// let s = StoredResponse(status: 200, headers: ["Cache-Control": "max-age=60"], requestTime: 0, responseTime: 0)
/// freshnessLifetime(response: s)  // 60
/// ```
public func freshnessLifetime(response: StoredResponse, sharedCache: Bool = true, cacheControl: CacheControl? = nil) -> Int64 {
    freshness(status: response.status, headers: response.headers, responseTime: response.responseTime,
              sharedCache: sharedCache, cacheControl: cacheControl).lifetime
}

/// The `Age` value of a response per RFC 9111 §5.1: the first member of the (combined) field; nil when absent
/// or invalid (negative, fractional, non-numeric), which means the field is ignored. Overflow clamps to 2^31.
///
/// ```swift
/// ageValue(["Age": "0, 7200"])  // 0
/// ageValue(["Age": "-5"])       // nil
/// ```
public func ageValue(_ headers: HTTPFields) -> Int64? {
    guard let combined = headers.combined("age"), let first = ListSyntax.splitList(combined).first else { return nil }
    return ListSyntax.deltaSeconds(first)
}

/// The current age of a stored response (RFC 9111 §4.2.3):
///
///     apparent_age          = max(0, response_time - date_value)
///     response_delay        = response_time - request_time
///     corrected_age_value   = age_value + response_delay
///     corrected_initial_age = max(apparent_age, corrected_age_value)
///     resident_time         = now - response_time
///     current_age           = corrected_initial_age + resident_time
///
/// `date_value` is `response_time` when `Date` is missing or invalid (RFC 9110 §6.6.1); an invalid `Age` is
/// ignored (0). Negative intervals from clock oddities count as 0; the result never exceeds 2^31.
///
/// ```swift
/// let s = StoredResponse(status: 200, headers: ["Age": "30", "Date": HTTPDate.format(100)],
///                        requestTime: 98, responseTime: 100)
/// currentAge(stored: s, now: 110)  // 30 + 2 + 10 = 42
/// ```
public func currentAge(stored: StoredResponse, now: Int64) -> Int64 {
    let residentTime = max(0, now - stored.responseTime)
    return min(correctedInitialAgeOf(stored) + residentTime, ListSyntax.deltaSecondsCap)
}

/// `corrected_initial_age` of `currentAge(stored:now:)`: the part that does not change with `now`.
func correctedInitialAgeOf(_ stored: StoredResponse) -> Int64 {
    let date = dateValue(stored.headers, responseTime: stored.responseTime)
    let apparentAge = max(0, stored.responseTime - date)
    let responseDelay = max(0, stored.responseTime - stored.requestTime)
    let correctedAgeValue = (ageValue(stored.headers) ?? 0) + responseDelay
    return max(apparentAge, correctedAgeValue)
}

/// The `Date` value of a response, or `responseTime` when it has none or an invalid one.
func dateValue(_ headers: HTTPFields, responseTime: Int64) -> Int64 {
    headers.first("date").flatMap { HTTPDate.parse($0, now: responseTime) } ?? responseTime
}
