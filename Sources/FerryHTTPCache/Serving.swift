// Building the response the cache sends from a stored one (RFC 9111 §4, §5.1; RFC 9110 §13.2, §15.4.5).

/// The `Age` field value for an age in seconds: never negative, and 2147483648 (2^31) for anything at or
/// beyond it (RFC 9111 §5.1).
///
/// ```swift
/// ageHeaderValue(42)            // "42"
/// ageHeaderValue(-3)            // "0"
/// ageHeaderValue(1 << 40)       // "2147483648"
/// ```
public func ageHeaderValue(_ age: Int64) -> String {
    String(min(max(age, 0), ListSyntax.deltaSecondsCap))
}

/// The header fields of a response served from the cache: the stored fields in order, every `Age` line
/// replaced by one `Age: age` at the end (RFC 9111 §4: a cache must send `Age` when reusing a response).
/// `Date` is left as stored (it is the origin's).
///
/// ```swift
/// headersForServing(stored: s, age: 30).first("age")  // "30"
/// ```
public func headersForServing(stored: StoredResponse, age: Int64) -> HTTPFields {
    stored.headers.replacingAll("Age", with: ageHeaderValue(age))
}

/// Whether the client's own conditional request is satisfied by `stored`, so that the daemon answers
/// `304 Not Modified` (with `notModifiedHeaders`) instead of the content (RFC 9111 §4.3.2, RFC 9110 §13.2.2).
/// Call it only once `stored` is usable for the request (fresh, or just validated).
/// - Only GET/HEAD, and only for a stored 2xx (preconditions are ignored for other statuses, §13.2.1).
/// - `If-None-Match` takes precedence: `*` matches, otherwise any listed tag that matches the stored `ETag`
///   weakly (§13.1.2).
/// - Else `If-Modified-Since` (a valid date, one member): the stored `Last-Modified` — or its `Date`, or the
///   time it was received, when it has none (RFC 9111 §4.3.2) — is not later than the given date.
/// `If-Match`, `If-Unmodified-Since` and `If-Range` are for the origin and are not evaluated here.
///
/// ```swift
/// // stored ETag "abc"
/// let req = CacheRequest(url: u, headers: ["If-None-Match": "\"x\", \"abc\""])
/// clientConditionMatches(request: req, stored: s)  // true
/// ```
public func clientConditionMatches(request: CacheRequest, stored: StoredResponse) -> Bool {
    guard request.method == "GET" || request.method == "HEAD", (200...299).contains(stored.status) else { return false }
    if let inm = request.headers.combined("if-none-match") {
        guard let tags = EntityTag.list(inm) else { return true }  // "*": the resource exists
        guard let mine = stored.headers.first("etag").flatMap(EntityTag.init) else { return false }
        return tags.contains { $0.weakMatches(mine) }
    }
    let ims = request.headers.values("if-modified-since")
    guard ims.count == 1, let since = HTTPDate.parse(ims[0]) else { return false }
    let modified = stored.headers.first("last-modified").flatMap { HTTPDate.parse($0) }
        ?? dateValue(stored.headers, responseTime: stored.responseTime)
    return modified <= since
}

/// The header fields of a 304 the cache generates from `stored` (RFC 9110 §15.4.5): `Cache-Control`,
/// `Content-Location`, `Date`, `ETag`, `Expires` and `Vary` as stored, `Last-Modified` only when there is no
/// `ETag` (it then guides the client's cache), and `Age: age`.
///
/// ```swift
/// notModifiedHeaders(stored: s, age: 5).first("etag")  // the stored ETag
/// ```
public func notModifiedHeaders(stored: StoredResponse, age: Int64) -> HTTPFields {
    var keep: Set<String> = ["cache-control", "content-location", "date", "etag", "expires", "vary"]
    if !stored.headers.contains("etag") { keep.insert("last-modified") }
    var out = HTTPFields()
    for field in stored.headers where keep.contains(ListSyntax.lower(field.name)) {
        out.append(field.name, field.value)
    }
    out.append("Age", ageHeaderValue(age))
    return out
}
