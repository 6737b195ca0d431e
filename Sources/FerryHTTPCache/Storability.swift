// Whether a response may be stored by a shared cache (RFC 9111 §3), and under which key.

/// The outcome of `storageVerdict`.
///
/// ```swift
/// switch storageVerdict(request: req, status: 200, responseHeaders: headers) {
/// case .store(let key): print("store under", key)
/// case .doNotStore(let reason): print("not stored:", reason)
/// }
/// ```
public enum StorageVerdict: Sendable, Equatable {
    /// Store the response under this primary key (plus its variant key, see `StoredResponse(storing:...)`).
    case store(key: HTTPCacheKey)
    /// Do not store; the reason is for logs.
    case doNotStore(reason: String)

    /// Whether the verdict is `.store`: `StorageVerdict.doNotStore(reason: "x").isStorable == false`.
    public var isStorable: Bool {
        if case .store = self { return true }
        return false
    }
}

/// Status codes whose caching rules this cache implements fully, for `must-understand` (RFC 9111
/// §5.2.2.3): the final codes of RFC 9110 except 206 (ranges are not supported) and 304.
///
/// ```swift
/// isUnderstoodStatus(200)  // true
/// isUnderstoodStatus(299)  // false
/// ```
public func isUnderstoodStatus(_ status: Int) -> Bool {
    switch status {
    case 200...205, 300...303, 305, 307, 308, 400...417, 421, 422, 426, 500...505: return true
    default: return false
    }
}

/// Whether a shared cache may store the response to `request` (RFC 9111 §3), checked in this order:
/// 1. mode `no-store` → no;
/// 2. the URL is an absolute http(s) URL without userinfo (`CacheKeyURL`);
/// 3. method: `GET` is stored under GET. `POST` is stored (under GET, to answer later GET/HEAD, RFC 9110
///    §9.3.3) only with explicit freshness (`max-age`, `s-maxage` or `Expires`) and a `Content-Location`
///    naming the request URL. `HEAD` responses are not stored as new entries (no content; they only refresh
///    stored GET responses, see `headUpdate`). Other methods: no;
/// 4. status: final (≥ 200) and < 600; not 206 (no range support) and not 304 (only updates entries);
/// 5. no `no-store` in the request; no `no-store` in the response — unless it also has `must-understand`
///    and the status is understood (§5.2.2.3: then `no-store` is ignored); `must-understand` with a status
///    not understood → no;
/// 6. no unqualified `private` (qualified `private` is fine: those fields are stripped);
/// 7. a request with `Authorization` — or, stricter than the RFC, a `Cookie` — only with `public`, `s-maxage` or
///    `must-revalidate` (§3.5);
///
///    where 6 or 7 refuses and the request has a credential `partition`, the response is stored in that partition
///    instead (the key names it), as a private cache of those credentials would;
/// 8. `Vary: *` → not stored: it could never be reused without the origin;
/// 9. at least one of: `Expires`, `max-age`, `s-maxage`, `public`, a heuristically cacheable status — or,
///    beyond the RFC's list, an unqualified `no-cache` with a validator (`ETag`/`Last-Modified`): such a
///    response is only ever reused after revalidation (except by `force-cache`/`only-if-cached`).
///
/// For a `POST`, apply `invalidatedURLs` first: it removes the entries this one then replaces.
///
/// ```swift
/// storageVerdict(request: CacheRequest(url: "http://a.test/"), status: 200,
///                responseHeaders: ["Cache-Control": "private"])
/// // .doNotStore(reason: "response Cache-Control: private")
/// ```
public func storageVerdict(request: CacheRequest, status: Int, responseHeaders: HTTPFields) -> StorageVerdict {
    if !request.mode.storesResponses { return .doNotStore(reason: "request cache mode is no-store") }
    guard let url = CacheKeyURL.normalize(request.url) else {
        return .doNotStore(reason: "URL is not an absolute http(s) URL without userinfo")
    }
    let cc = CacheControl(responseHeaders: responseHeaders)
    let explicitExpiry = cc.maxAge != nil || cc.sMaxAge != nil || responseHeaders.contains("expires")

    switch request.method {
    case "GET":
        break
    case "POST":
        guard explicitExpiry else { return .doNotStore(reason: "POST response without explicit freshness") }
        guard let location = responseHeaders.first("content-location"),
            CacheKeyURL.resolve(ListSyntax.trimOWS(location), against: url) == url
        else { return .doNotStore(reason: "POST response without a Content-Location naming the request URL") }
    case "HEAD":
        return .doNotStore(reason: "HEAD responses are not stored (they only refresh stored GET responses)")
    default:
        return .doNotStore(reason: "method \(request.method) is not cacheable")
    }

    if status < 200 { return .doNotStore(reason: "status \(status) is not final") }
    if status >= 600 { return .doNotStore(reason: "status \(status) is not a valid status code") }
    if status == 206 { return .doNotStore(reason: "partial content (206) is not supported") }
    if status == 304 { return .doNotStore(reason: "a 304 only updates stored responses") }

    if request.cacheControl.noStore { return .doNotStore(reason: "request Cache-Control: no-store") }
    if cc.mustUnderstand && !isUnderstoodStatus(status) {
        return .doNotStore(reason: "must-understand with status \(status), which this cache does not understand")
    }
    if cc.noStore && !cc.mustUnderstand { return .doNotStore(reason: "response Cache-Control: no-store") }
    var partition: String?
    if cc.isPrivate {
        guard let p = request.partition else { return .doNotStore(reason: "response Cache-Control: private") }
        partition = p
    }
    let credentials = request.headers.contains("authorization") || request.headers.contains("cookie")
    if credentials && !(cc.isPublic || cc.sMaxAge != nil || cc.mustRevalidate) {
        guard let p = request.partition else {
            return .doNotStore(
                reason: "request has Authorization or Cookie and the response lacks public, s-maxage and must-revalidate")
        }
        partition = p
    }
    if varyFieldNames(responseHeaders.combined("vary")) == nil {
        return .doNotStore(reason: "Vary: * can never be reused")
    }
    let hasValidator = responseHeaders.contains("etag") || responseHeaders.contains("last-modified")
    guard explicitExpiry || cc.isPublic || isHeuristicallyCacheable(status: status) || (cc.noCache && hasValidator)
    else {
        return .doNotStore(
            reason: "no explicit freshness, not public, and status \(status) is not heuristically cacheable")
    }
    return .store(key: HTTPCacheKey(method: "GET", url: url, partition: partition))
}
