/// What `evaluate` works out from a stored response alone — its `Cache-Control`, its corrected initial age and its
/// freshness lifetime — made once and kept with the record, so that a hit does not parse its `Date`, `Age`,
/// `Expires`, `Last-Modified` and `Cache-Control` again (measured: a fifth of a fetch hit went to that).
///
/// Facts belong to one `StoredResponse`: made from it, they are right for it and for nothing else, and
/// `evaluate(request:stored:now:facts:)` decides exactly as `evaluate(request:stored:now:)` does (a test holds
/// the two to it).
///
/// ```swift
/// let stored = StoredResponse(status: 200, headers: ["Cache-Control": "max-age=60", "Age": "5"],
///                             requestTime: 1000, responseTime: 1000)
/// let facts = StoredFacts(stored)                  // lifetime 60, initial age 5
/// evaluate(request: CacheRequest(url: "http://a.test/"), stored: stored, now: 1030, facts: facts)  // .fresh(age: 35)
/// ```
public struct StoredFacts: Sendable, Equatable {
    public let cacheControl: CacheControl
    /// RFC 9111 §4.2.3's `corrected_initial_age`.
    public let correctedInitialAge: Int64
    /// RFC 9111 §4.2.1, as a shared cache.
    public let lifetime: Int64
    /// The response time the facts were made with (current age counts from it).
    public let responseTime: Int64

    public init(_ stored: StoredResponse) {
        cacheControl = stored.cacheControl
        correctedInitialAge = correctedInitialAgeOf(stored)
        lifetime = freshnessLifetime(response: stored, cacheControl: cacheControl)
        responseTime = stored.responseTime
    }

    /// The response's current age at `now` (`currentAge(stored:now:)`).
    public func currentAge(now: Int64) -> Int64 {
        min(correctedInitialAge + max(0, now - responseTime), ListSyntax.deltaSecondsCap)
    }
}
