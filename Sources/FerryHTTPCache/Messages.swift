import FerryProtocol

/// A request as the cache sees it before it goes to the network.
///
/// ```swift
/// let req = CacheRequest(url: "https://a.test/x", headers: ["Accept": "text/html"], mode: .default)
/// req.lookupKey  // GET https://a.test/x
/// ```
public struct CacheRequest: Sendable, Equatable {
    /// The method, case-sensitive ("GET", "HEAD", "POST", ...): `CacheRequest(url: u).method == "GET"`.
    public var method: String
    /// The target URI as sent (normalised by this module where needed), e.g. `"https://a.test/x?y=1"`.
    public var url: String
    /// The request header fields, e.g. `["Accept": "text/html"]`.
    public var headers: HTTPFields
    /// The Fetch cache mode: `CacheRequest(url: u, mode: .noCache).mode == .noCache`.
    public var mode: CacheMode
    /// The request's credential partition, when it carries `Authorization` or `Cookie`: a keyed digest of those
    /// credentials (and of who asks), never the credentials. Responses only such a request may reuse — `private`
    /// ones, and those to credentials without `public`, `s-maxage` or `must-revalidate` — are stored there and
    /// served only to requests of the same partition; the rest of the cache is shared, as RFC 9111 says.
    public var partition: String?

    /// A request.
    ///
    /// ```swift
    /// let head = CacheRequest(method: "HEAD", url: "http://a.test/")
    /// ```
    public init(
        method: String = "GET", url: String, headers: HTTPFields = HTTPFields(), mode: CacheMode = .default,
        partition: String? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.mode = mode
        self.partition = partition
    }

    /// The request's `Cache-Control` directives (with `Pragma: no-cache` when it has no `Cache-Control`).
    ///
    /// ```swift
    /// CacheRequest(url: "http://a.test/", headers: ["Cache-Control": "max-stale"]).cacheControl.maxStale
    /// // CacheControl.unlimited
    /// ```
    public var cacheControl: CacheControl { CacheControl(requestHeaders: headers) }

    /// The primary key to look stored responses up under, or nil if none can be used (see `HTTPCacheKey`).
    ///
    /// ```swift
    /// CacheRequest(method: "HEAD", url: "http://a.test").lookupKey  // GET http://a.test/
    /// ```
    public var lookupKey: HTTPCacheKey? { HTTPCacheKey(lookupFor: method, url: url) }

    /// Where a stored response for this request may be, in the order to look: its credential partition first
    /// (a response only it may reuse), then the shared cache.
    ///
    /// ```swift
    /// CacheRequest(url: "http://a.test/", partition: "p1").lookupKeys.map(\.description)
    /// // ["GET http://a.test/ (partition p1)", "GET http://a.test/"]
    /// ```
    public var lookupKeys: [HTTPCacheKey] {
        guard let shared = lookupKey else { return [] }
        guard let partition else { return [shared] }
        return [HTTPCacheKey(method: shared.method, url: shared.url, partition: partition), shared]
    }

    /// Whether the request must not go to the network: mode `only-if-cached`, or the request directive
    /// `only-if-cached` (RFC 9111 §5.2.1.7). When `evaluate` then says `.validate` or `.mustFetch` (or nothing
    /// is stored), the daemon answers 504 instead of fetching.
    ///
    /// ```swift
    /// let req = CacheRequest(url: "http://a.test/", headers: ["Cache-Control": "only-if-cached"])
    /// req.requiresCachedResponse  // true
    /// ```
    public var requiresCachedResponse: Bool { mode == .onlyIfCached || cacheControl.onlyIfCached }
}

/// A response held by the cache: status, the header fields as stored, and the times needed for its age.
/// The body is stored by the daemon elsewhere.
///
/// ```swift
/// let stored = StoredResponse(status: 200, headers: ["Cache-Control": "max-age=60", "Date": HTTPDate.format(1000)],
///                             requestTime: 999, responseTime: 1000, bodySize: 512)
/// ```
public struct StoredResponse: Sendable, Equatable {
    /// The status code, e.g. `200`.
    public var status: Int
    /// The header fields as stored (see `headersToStore`), e.g. `["Cache-Control": "max-age=60"]`.
    public var headers: HTTPFields
    /// When the request that produced this response was sent (Unix seconds): `request_time`, RFC 9111 §4.2.3,
    /// e.g. `1_700_000_000`.
    public var requestTime: Int64
    /// When the response was received (Unix seconds): `response_time`, RFC 9111 §4.2.3, e.g. `1_700_000_001`.
    public var responseTime: Int64
    /// The secondary key (`variantKey`) of the request that produced this response; nil or "" when the
    /// response has no `Vary`; e.g. `"accept=text/html"` for `Vary: Accept`.
    public var varyKey: String?
    /// The size of the stored body in bytes (used for `Content-Length` checks on HEAD), e.g. `512`.
    public var bodySize: Int

    /// A stored response from its parts, taken as given.
    ///
    /// ```swift
    /// let s = StoredResponse(status: 404, headers: [:], requestTime: 0, responseTime: 0)
    /// ```
    public init(
        status: Int, headers: HTTPFields, requestTime: Int64, responseTime: Int64, varyKey: String? = nil,
        bodySize: Int = 0
    ) {
        self.status = status
        self.headers = headers
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.varyKey = varyKey
        self.bodySize = bodySize
    }

    /// The entry to store for a response just received: its headers filtered by `headersToStore` (with a
    /// `Date` added when missing) and the variant key of `request` for the response's `Vary`.
    /// Check `storageVerdict` first.
    ///
    /// ```swift
    /// let entry = StoredResponse(storing: 200, headers: ["Vary": "Accept", "Connection": "close"],
    ///                            for: CacheRequest(url: "http://a.test/", headers: ["Accept": "*/*"]),
    ///                            requestTime: 10, responseTime: 11, bodySize: 3)
    /// entry.varyKey  // "accept=*/*"
    /// ```
    public init(
        storing status: Int, headers: HTTPFields, for request: CacheRequest, requestTime: Int64, responseTime: Int64,
        bodySize: Int = 0
    ) {
        let stored = headersToStore(response: headers, receivedAt: responseTime)
        let key = variantKey(forVaryOf: stored, request: request.headers)
        self.init(status: status, headers: stored, requestTime: requestTime, responseTime: responseTime,
                  varyKey: key?.isEmpty == false ? key : nil, bodySize: bodySize)
    }

    /// The response's `Cache-Control` directives.
    ///
    /// ```swift
    /// StoredResponse(status: 200, headers: ["Cache-Control": "no-cache"], requestTime: 0, responseTime: 0)
    ///     .cacheControl.noCache  // true
    /// ```
    public var cacheControl: CacheControl { CacheControl(responseHeaders: headers) }
}
