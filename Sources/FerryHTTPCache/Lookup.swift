// The decision for a request against one stored response (RFC 9111 §4, RFC 5861, Fetch cache modes).

/// What to do with a stored response for a request.
///
/// ```swift
/// switch evaluate(request: req, stored: entry, now: clock.now) {
/// case .fresh(let age): serve(entry, headers: headersForServing(stored: entry, age: age))
/// case .staleWhileRevalidate(let age): serve(entry, age); revalidateInBackground(conditionalHeaders(for: entry))
/// case .validate(let conditional): fetch(adding: conditional)   // then 304 → updating(...), 200 → store
/// case .mustFetch: fetch()
/// }
/// ```
public enum CacheDecision: Sendable, Equatable {
    /// Serve the stored response without contacting the origin, with `Age: age`. This covers fresh
    /// responses, and stale ones the request accepts (`max-stale`) or the mode allows (`force-cache`,
    /// `only-if-cached`).
    case fresh(age: Int64)
    /// Serve the stale stored response now (`Age: age`) and revalidate it once in the background
    /// (RFC 5861 §3), with `conditionalHeaders(for:)`.
    case staleWhileRevalidate(age: Int64)
    /// Send the request with these conditional header fields (instead of any the client sent: answer the
    /// client afterwards with `clientConditionMatches`); a 304 freshens the stored response
    /// (`selectForUpdate`, `StoredResponse.updating`), anything else replaces or removes it.
    case validate(conditionalHeaders: HTTPFields)
    /// The stored response cannot be used (wrong variant or method, or it needs validation and has no
    /// validator): fetch normally. Keep it for `staleIfErrorAllowed` if the fetch fails.
    case mustFetch
}

/// Whether explicit directives forbid serving the response once stale without validation (RFC 9111
/// §4.2.4): `must-revalidate`, `proxy-revalidate` (this is a shared cache) and unqualified `no-cache`.
/// `s-maxage` implies `proxy-revalidate` (§5.2.2.10) unless the origin explicitly allowed stale serving
/// with `stale-while-revalidate` / `stale-if-error` in the same response: the explicit RFC 5861 permission
/// is taken to override the implied one (the common `s-maxage=N, stale-while-revalidate=M` CDN idiom).
func staleServingForbidden(_ cc: CacheControl, allowingExplicitPermission: Bool) -> Bool {
    if cc.mustRevalidate || cc.proxyRevalidate || cc.noCache { return true }
    return cc.sMaxAge != nil && !allowingExplicitPermission
}

/// The decision for `request` against `stored`, which the daemon found under `request.lookupKey` (RFC 9111
/// §4). In order:
/// 1. modes `no-store` / `reload`, a method other than GET/HEAD, or a `Vary` mismatch (`variantMatches`)
///    → `.mustFetch`;
/// 2. modes `force-cache` / `only-if-cached` → `.fresh` whatever the staleness or directives;
/// 3. mode `no-cache`, response `no-cache`, request `no-cache` (or `Pragma: no-cache` without
///    `Cache-Control`) → validate;
/// 4. request `max-age=N`: validate when age > N; `max-age=0` always validates (with whole-second clocks a
///    just-stored response has age 0, and clients send `max-age=0` to force end-to-end revalidation);
/// 5. fresh (lifetime > age): validate when request `min-fresh=N` and lifetime − age < N, else `.fresh`;
/// 6. stale: never served unvalidated when `staleServingForbidden`; else `.fresh` when request `max-stale`
///    allows it (staleness ≤ N; no value = any), else `.staleWhileRevalidate` while staleness < the
///    response's `stale-while-revalidate` (so exactly N seconds of stale serving), else validate.
/// "Validate" is `.validate` with `conditionalHeaders(for:)`, or `.mustFetch` when the response has no
/// validator. Request `no-store` only prevents storing (RFC 9111 §5.2.1.5) and does not stop reuse.
///
/// ```swift
/// let stored = StoredResponse(status: 200, headers: ["Cache-Control": "max-age=60", "Date": HTTPDate.format(1000)],
///                             requestTime: 1000, responseTime: 1000)
/// evaluate(request: CacheRequest(url: "http://a.test/"), stored: stored, now: 1030)  // .fresh(age: 30)
/// evaluate(request: CacheRequest(url: "http://a.test/"), stored: stored, now: 1060)  // .mustFetch (no validator)
/// ```
public func evaluate(request: CacheRequest, stored: StoredResponse, now: Int64) -> CacheDecision {
    evaluate(request: request, stored: stored, now: now, facts: StoredFacts(stored))
}

/// The same, with the facts of `stored` made before (`StoredFacts(stored)`, kept with its record).
public func evaluate(request: CacheRequest, stored: StoredResponse, now: Int64, facts: StoredFacts) -> CacheDecision {
    guard request.mode.consultsCache, request.method == "GET" || request.method == "HEAD",
        variantMatches(stored: stored, request: request)
    else { return .mustFetch }
    let age = facts.currentAge(now: now)
    if request.mode.ignoresStaleness { return .fresh(age: age) }

    let responseCC = facts.cacheControl
    let requestCC = request.cacheControl
    // Only when the answer is to validate: a fresh hit builds no conditional request.
    var revalidate: CacheDecision {
        let conditional = conditionalHeaders(for: stored)
        return conditional.isEmpty ? .mustFetch : .validate(conditionalHeaders: conditional)
    }

    if request.mode == .noCache || responseCC.noCache || requestCC.noCache { return revalidate }
    if let maxAge = requestCC.maxAge, maxAge == 0 || age > maxAge { return revalidate }

    let lifetime = facts.lifetime
    if lifetime > age {
        if let minFresh = requestCC.minFresh, lifetime - age < minFresh { return revalidate }
        return .fresh(age: age)
    }
    let staleness = age - lifetime
    let swr = responseCC.staleWhileRevalidate
    let explicitPermission = swr != nil || responseCC.staleIfError != nil
    if staleServingForbidden(responseCC, allowingExplicitPermission: explicitPermission) { return revalidate }
    if let maxStale = requestCC.maxStale, staleness <= maxStale, responseCC.sMaxAge == nil {
        return .fresh(age: age)
    }
    if let swr, staleness < swr { return .staleWhileRevalidate(age: age) }
    return revalidate
}

/// Whether `stored` may be served when fetching or validating it failed — a 500, 502, 503 or 504 from the
/// origin, or no answer at all (RFC 5861 §4, RFC 9111 §4.2.4). True when the variant matches and:
/// - the mode is `force-cache` or `only-if-cached`; or
/// - the response is still fresh and has no unqualified `no-cache`; or
/// - stale serving is not forbidden (`staleServingForbidden`) and one of: the response's `stale-if-error=N`
///   with staleness < N; or, when the response has no `s-maxage` (whose implied `proxy-revalidate` only the
///   origin can lift): the request's `stale-if-error=N` with staleness < N, the request's `max-stale=N` with
///   staleness ≤ N, or `disconnected` (the origin could not be reached at all: RFC 9111 §4.2.4 lets a
///   disconnected cache serve stale responses that do not forbid it).
/// Modes `no-store` and `reload` never serve stored responses.
///
/// ```swift
/// // Cache-Control: max-age=60, stale-if-error=300, stored at 1000
/// staleIfErrorAllowed(stored: s, request: req, now: 1200)  // true (140 s stale < 300)
/// staleIfErrorAllowed(stored: s, request: req, now: 1400)  // false
/// ```
public func staleIfErrorAllowed(
    stored: StoredResponse, request: CacheRequest, now: Int64, disconnected: Bool = false
) -> Bool {
    guard request.mode.consultsCache, request.method == "GET" || request.method == "HEAD",
        variantMatches(stored: stored, request: request)
    else { return false }
    if request.mode.ignoresStaleness { return true }
    let cc = stored.cacheControl
    let age = currentAge(stored: stored, now: now)
    let lifetime = freshnessLifetime(response: stored)
    if lifetime > age { return !cc.noCache }

    let staleness = age - lifetime
    let requestCC = request.cacheControl
    let explicitPermission = cc.staleWhileRevalidate != nil || cc.staleIfError != nil
    if staleServingForbidden(cc, allowingExplicitPermission: explicitPermission) { return false }
    if let n = cc.staleIfError, staleness < n { return true }
    // s-maxage implies proxy-revalidate: only the origin's own stale-if-error can lift it, not the client.
    if cc.sMaxAge != nil { return false }
    if let n = requestCC.staleIfError, staleness < n { return true }
    if let n = requestCC.maxStale, staleness <= n { return true }
    return disconnected
}
