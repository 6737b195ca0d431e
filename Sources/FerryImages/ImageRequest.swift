import FerryHTTPCache
import FerryProtocol

/// One `image.get` (or prefetch): which image, with which request headers, HTTP cache mode and time limit. Made
/// from arguments already checked (the operation's), and turned by the `ImageFetching` into the one fetch that
/// brings the bytes.
///
/// ```swift
/// let r = ImageRequest(url: "https://img.test/a.png", headers: [("Accept", "image/webp")])
/// r.key           // "https://img.test/a.png\naccept: image/webp": what the memory tier is keyed by
/// r.downloadKey   // the same plus cache mode and time limit: who shares a download
/// var v = r; v.variant = ImageVariant(width: 200, height: nil)   // a 200-pixel-wide variant of it
/// ```
public struct ImageRequest: Sendable {
    public var url: String
    public var headers: [(String, String)]
    public var cache: CacheMode
    /// For each exchange with the origin; nil: the fetcher's own limit.
    public var timeoutMs: Int?
    /// Who asks (a client connection; 0 when nobody in particular): download slots are shared fairly among owners.
    /// Not part of the image's identity: two clients asking for one URL share one download.
    public var owner: UInt64 = 0
    /// A variant to make of the image (a size, a fit, a format); nil: the original's bytes.
    public var variant: ImageVariant?
    /// Only warms the caches (`prefetch`): its download waits behind every direct request, and joining a queued
    /// prefetch does not move it to the front line as a direct request does.
    public var isPrefetch = false

    public init(url: String, headers: [(String, String)] = [], cache: CacheMode = .default, timeoutMs: Int? = nil) {
        self.url = url
        self.headers = headers
        self.cache = cache
        self.timeoutMs = timeoutMs
    }

    /// Memory key: the normalised URL (plus the headers, when any).
    public var key: String { ImageKey.make(url: CacheKeyURL.normalize(url) ?? url, headers: headers) }

    /// Memory key of the variant asked for (its box, fit and format after the original's key).
    var variantKey: String { key + "\n#variant " + (variant?.keyPart ?? "") }

    /// In-flight key: requests share a download only if they would make the same fetch — same cache mode (a reload
    /// must not get a default request's cached answer) and same time limit.
    public var downloadKey: String { key + "\n#\(cache.rawValue) \(timeoutMs ?? 0)" }
}

extension CacheMode {
    /// Whether the image memory tier may answer: not for modes that bypass or must revalidate stored responses.
    var readsMemory: Bool { self == .default || self == .forceCache || self == .onlyIfCached }
}

/// The loader's key: the normalised URL, plus the request headers when there are any (an `Authorization` or
/// `Accept` header can change the image).
enum ImageKey {
    static func make(url: String, headers: [(String, String)]) -> String {
        guard !headers.isEmpty else { return url }
        let sorted = headers.map { ($0.0.lowercased(), $0.1) }.sorted { $0 < $1 }
        return url + "\n" + sorted.map { "\($0.0): \($0.1)" }.joined(separator: "\n")
    }

    static func url(of key: String) -> String {
        key.firstIndex(of: "\n").map { String(key[..<$0]) } ?? key
    }
}
