// Invalidation after unsafe requests (RFC 9111 §4.4).

/// Whether a method is safe (RFC 9110 §9.2.1): GET, HEAD, OPTIONS, TRACE. Every other method, including
/// unknown ones, is treated as unsafe. Methods are case-sensitive.
///
/// ```swift
/// isSafeMethod("OPTIONS")   // true
/// isSafeMethod("M-SEARCH")  // false
/// ```
public func isSafeMethod(_ method: String) -> Bool {
    method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "TRACE"
}

/// The normalised URLs whose stored responses (every variant, under the GET key) must be invalidated after
/// a response to a request (RFC 9111 §4.4): nothing for a safe method or for a status outside 200–399
/// (an error or interim response changes nothing); otherwise the request URL, then the URLs of `Location`
/// and `Content-Location` (resolved against the request URL), the latter two only when they have the same
/// origin (scheme, host, port) as the request URL — a cache must not let one origin invalidate another's
/// responses. No duplicates; nothing when the request URL is not an http(s) URL.
///
/// ```swift
/// invalidatedURLs(requestMethod: "POST", requestURL: "http://a.test/items", responseStatus: 201,
///                 responseHeaders: ["Location": "/items/7", "Content-Location": "http://b.test/x"])
/// // ["http://a.test/items", "http://a.test/items/7"]
/// ```
public func invalidatedURLs(
    requestMethod: String, requestURL: String, responseStatus: Int, responseHeaders: HTTPFields
) -> [String] {
    guard !isSafeMethod(requestMethod), (200...399).contains(responseStatus),
        let target = CacheKeyURL.normalize(requestURL), let origin = CacheKeyURL.origin(of: target)
    else { return [] }
    var urls = [target]
    for name in ["location", "content-location"] {
        guard let value = responseHeaders.first(name),
            let url = CacheKeyURL.resolve(ListSyntax.trimOWS(value), against: target),
            CacheKeyURL.origin(of: url) == origin, !urls.contains(url)
        else { continue }
        urls.append(url)
    }
    return urls
}
