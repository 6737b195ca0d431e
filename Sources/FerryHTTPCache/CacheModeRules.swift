import FerryProtocol

/// The caching rules of the request cache modes (`CacheMode`, a wire word of FerryProtocol), with the semantics
/// of the WHATWG Fetch `RequestCache` modes.
///
/// | mode             | look in the cache                  | store the response |
/// |------------------|------------------------------------|--------------------|
/// | `default`        | normal HTTP caching (RFC 9111)     | yes, if storable   |
/// | `no-store`       | no                                 | no                 |
/// | `reload`         | no                                 | yes, if storable   |
/// | `no-cache`       | always validate a stored response  | yes, if storable   |
/// | `force-cache`    | any matching response, even stale  | yes, if storable   |
/// | `only-if-cached` | any matching response, even stale; never the network (no match → fail) | — |
///
/// ```swift
/// CacheMode(rawValue: "force-cache")  // .forceCache
/// CacheMode.reload.consultsCache      // false
/// ```
extension CacheMode {
    /// Whether stored responses may be looked at at all.
    ///
    /// ```swift
    /// CacheMode.noStore.consultsCache  // false
    /// ```
    public var consultsCache: Bool { self != .noStore && self != .reload }

    /// Whether a (storable) response obtained for this request may be stored.
    ///
    /// ```swift
    /// CacheMode.reload.storesResponses  // true
    /// ```
    public var storesResponses: Bool { self != .noStore }

    /// Whether a stored match is used whatever its freshness (and without validation).
    ///
    /// ```swift
    /// CacheMode.forceCache.ignoresStaleness  // true
    /// ```
    public var ignoresStaleness: Bool { self == .forceCache || self == .onlyIfCached }

    /// Whether the network may be used; with `only-if-cached` a missing match is an error (504-like).
    ///
    /// ```swift
    /// CacheMode.onlyIfCached.mayUseNetwork  // false
    /// ```
    public var mayUseNetwork: Bool { self != .onlyIfCached }

    /// The request headers to send to the origin, with what Fetch adds for this mode so that caches further
    /// along honour it too: `no-store` and `reload` add `Pragma: no-cache` and `Cache-Control: no-cache`,
    /// `no-cache` adds `Cache-Control: max-age=0` — each only when the request has no such field already.
    ///
    /// ```swift
    /// CacheMode.noCache.outgoingHeaders([:]).first("cache-control")  // "max-age=0"
    /// ```
    public func outgoingHeaders(_ headers: HTTPFields) -> HTTPFields {
        var h = headers
        switch self {
        case .noStore, .reload:
            if !h.contains("pragma") { h.append("Pragma", "no-cache") }
            if !h.contains("cache-control") { h.append("Cache-Control", "no-cache") }
        case .noCache:
            if !h.contains("cache-control") { h.append("Cache-Control", "max-age=0") }
        case .default, .forceCache, .onlyIfCached:
            break
        }
        return h
    }
}
