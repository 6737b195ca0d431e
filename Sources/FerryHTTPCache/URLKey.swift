/// Normalisation of request URLs into the URL half of a cache key.
///
/// Only absolute `http` / `https` URLs are cacheable. Normalisation follows RFC 3986 §6.2.2–6.2.3 only where
/// it can never merge two different resources:
/// - scheme and host are lower-cased; a default port (80 for http, 443 for https) or an empty port is dropped;
/// - an empty path becomes `/`; the fragment is removed (it is never sent to the origin);
/// - path and query are kept byte for byte as sent: no percent-decoding, no case change of escapes, no
///   dot-segment removal, and an empty query (`/x?`) stays distinct from no query.
/// - URLs with userinfo (`http://user:pass@host/`) are rejected (nil): RFC 9110 §4.2.4 says to treat
///   userinfo in an http(s) URI as an error, and keying credentials would be a leak.
/// - Whitespace or control characters anywhere, an empty host, or a port that is not 0–65535 → nil.
///
/// ```swift
/// CacheKeyURL.normalize("HTTP://Example.COM:80")        // "http://example.com/"
/// CacheKeyURL.normalize("https://a.test:8443/p?q=1#f")  // "https://a.test:8443/p?q=1"
/// CacheKeyURL.normalize("ftp://a.test/")                // nil
/// ```
public enum CacheKeyURL {
    /// The normalised form of an absolute http(s) URL, or nil when it is not one.
    ///
    /// ```swift
    /// CacheKeyURL.normalize("http://a.test/%7Euser/../x")  // "http://a.test/%7Euser/../x"
    /// ```
    public static func normalize(_ url: String) -> String? {
        NormalizedURLs.shared.normalize(url)
    }

    /// `scheme://host[:port]` of an absolute http(s) URL (normalised), or nil.
    ///
    /// ```swift
    /// CacheKeyURL.origin(of: "https://A.test:443/x")  // "https://a.test"
    /// ```
    public static func origin(of url: String) -> String? {
        parse(url)?.origin
    }

    /// The pieces of a normalised URL.
    struct Parts: Equatable {
        var scheme: String  // "http" or "https"
        var host: String  // lower-cased, IPv6 literals keep their brackets
        var port: Int?  // nil when default
        var path: String  // never empty
        var query: String?  // without "?"

        var origin: String { port.map { "\(scheme)://\(host):\($0)" } ?? "\(scheme)://\(host)" }
        var string: String { origin + path + (query.map { "?" + $0 } ?? "") }
    }

    static func parse(_ url: String) -> Parts? {
        let b = Array(url.utf8)
        guard !b.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return nil }
        guard let colon = b.firstIndex(of: 0x3A) else { return nil }
        let scheme = ListSyntax.lower(String(decoding: b[0..<colon], as: UTF8.self))
        guard scheme == "http" || scheme == "https" else { return nil }
        guard b.count >= colon + 3, b[colon + 1] == 0x2F, b[colon + 2] == 0x2F else { return nil }
        var rest = Array(b[(colon + 3)...])
        if let hash = rest.firstIndex(of: 0x23) { rest = Array(rest[..<hash]) }
        let authorityEnd = rest.firstIndex(where: { $0 == 0x2F || $0 == 0x3F }) ?? rest.count
        guard let (host, port) = authority(Array(rest[..<authorityEnd]), scheme: scheme) else { return nil }
        let tail = rest[authorityEnd...]
        var path: String
        var query: String?
        if let q = tail.firstIndex(of: 0x3F) {
            path = String(decoding: tail[tail.startIndex..<q], as: UTF8.self)
            query = String(decoding: tail[(q + 1)...], as: UTF8.self)
        } else {
            path = String(decoding: tail, as: UTF8.self)
        }
        if path.isEmpty { path = "/" }
        return Parts(scheme: scheme, host: host, port: port, path: path, query: query)
    }

    /// host and non-default port of an authority, or nil when it has userinfo or is malformed.
    private static func authority(_ a: [UInt8], scheme: String) -> (String, Int?)? {
        guard !a.isEmpty, !a.contains(0x40) else { return nil }  // "@": userinfo
        var hostBytes: ArraySlice<UInt8>
        var portBytes: ArraySlice<UInt8> = []
        if a[0] == 0x5B {  // "[v6]"
            guard let close = a.firstIndex(of: 0x5D) else { return nil }
            hostBytes = a[0...close]
            let after = a[(close + 1)...]
            if let first = after.first {
                guard first == 0x3A else { return nil }
                portBytes = after.dropFirst()
            }
        } else if let c = a.lastIndex(of: 0x3A) {
            hostBytes = a[..<c]
            portBytes = a[(c + 1)...]
        } else {
            hostBytes = a[...]
        }
        guard !hostBytes.isEmpty else { return nil }
        var port: Int?
        if !portBytes.isEmpty {
            var v = 0
            for d in portBytes {
                guard d >= 0x30, d <= 0x39, v <= 65_535 else { return nil }
                v = v * 10 + Int(d - 0x30)
            }
            guard v <= 65_535 else { return nil }
            let defaultPort = scheme == "http" ? 80 : 443
            port = v == defaultPort ? nil : v
        }
        return (ListSyntax.lower(String(decoding: hostBytes, as: UTF8.self)), port)
    }
}

/// The primary cache key: request method and normalised target URI (RFC 9111 §2).
///
/// Responses are stored under `GET` (a cacheable `POST` response is stored under `GET` too, RFC 9110
/// §9.3.3), and a `HEAD` request is answered from the stored `GET` response (RFC 9111 §4), so lookups for
/// both `GET` and `HEAD` use the `GET` key.
///
/// ```swift
/// HTTPCacheKey(lookupFor: "HEAD", url: "http://A.test")  // GET http://a.test/
/// HTTPCacheKey(lookupFor: "POST", url: "http://a.test/") // nil: never answered from the cache
/// ```
public struct HTTPCacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The method the stored response is filed under (always "GET" for keys built by this module), e.g. `"GET"`.
    public let method: String
    /// The normalised URL (`CacheKeyURL.normalize`), e.g. `"http://a.test/"`.
    public let url: String
    /// The credential partition it belongs to (`CacheRequest.partition`); nil: the shared cache.
    public let partition: String?

    /// A key from parts already normalised (e.g. read back from the store).
    ///
    /// ```swift
    /// let key = HTTPCacheKey(method: "GET", url: "http://a.test/")
    /// ```
    public init(method: String, url: String, partition: String? = nil) {
        self.method = method
        self.url = url
        self.partition = partition
    }

    /// The key to look a request up under, or nil when the request can never be answered from the cache
    /// (method other than GET/HEAD — methods are case-sensitive, RFC 9110 §9.1 — or a URL that is not
    /// absolute http(s)).
    ///
    /// ```swift
    /// HTTPCacheKey(lookupFor: "GET", url: "https://a.test:443/x#top")?.url  // "https://a.test/x"
    /// ```
    public init?(lookupFor method: String, url: String) {
        guard method == "GET" || method == "HEAD", let normalized = CacheKeyURL.normalize(url) else { return nil }
        self.init(method: "GET", url: normalized)
    }

    /// "METHOD url" (and the partition), the key responses are stored under:
    /// `HTTPCacheKey(method: "GET", url: "http://a.test/").description == "GET http://a.test/"`.
    public var description: String { partition.map { "\(method) \(url) (partition \($0))" } ?? "\(method) \(url)" }
}
