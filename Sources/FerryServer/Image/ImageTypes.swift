import FerryFetch
import FerryHTTPCache
import FerryImageFormat
import FerryProtocol

/// One `image.get` (or prefetch): the fetch that brings the image, checked once when the request arrived
/// (`ImageArguments` for `image.get`, a plain GET for `image.prefetch`) and handed to the fetch pipeline as is.
struct ImageRequest: Sendable {
    var spec: FetchSpec

    init(spec: FetchSpec) { self.spec = spec }

    /// A plain GET of `url` through the default cache mode (a URL already checked by `FetchSpec.urlProblem`).
    init(url: String) {
        spec = FetchSpec(url: url)
    }

    var url: String { spec.url }
    var cache: CacheMode { spec.cacheMode }

    /// Memory key: the normalised URL (plus the headers, when any).
    var key: String { ImageKey.make(url: CacheKeyURL.normalize(spec.url) ?? spec.url, headers: spec.headers) }

    /// In-flight key: requests share a download only if they would make the same fetch — same cache mode (a reload
    /// must not get a default request's cached answer) and same time limit.
    var downloadKey: String { key + "\n#\(cache.rawValue) \(spec.timeoutMs ?? 0)" }
}

extension CacheMode {
    /// Whether the image memory tier may answer: not for modes that bypass or must revalidate stored responses.
    var readsMemory: Bool { self == .default || self == .forceCache || self == .onlyIfCached }
}

/// What the fetch pipeline brought back for an image.
struct FetchedImage: Sendable {
    var body: [UInt8]
    var url: String
    /// `.disk` (the HTTP cache had it) or `.network`.
    var source: ImageSource
    /// Until when the memory tier may serve it without asking (from the response's freshness).
    var freshUntilMs: Int64
    /// False for `no-store`, `private` (this memory tier is shared by every client) and `no-cache` (no reuse without
    /// asking): not kept in memory either.
    var mayKeep: Bool
}

/// The image loader's failures, each with its protocol code.
enum ImageError: Error, Sendable {
    /// The body is not an image, or is cut before its size: `invalid_image`.
    case invalidImage(ImageSniffError)
    /// The fetch failed (its own error travels on).
    case fetch(WireError)
    /// The origin answered with an error status.
    case httpStatus(Int, url: String)
    case cancelled

    var wireError: WireError {
        switch self {
        case .invalidImage(let e):
            switch e {
            case .notAnImage(let m): return WireError(.invalidImage, "not an image: \(m)")
            case .truncated(let m): return WireError(.invalidImage, "truncated image: \(m)")
            case .tooLarge(let w, let h, let limit):
                return WireError(.invalidImage, "the image is \(w)×\(h) pixels, more than the limit of \(limit)",
                                 details: ["width": .int(Int64(w)), "height": .int(Int64(h)), "max_pixels": .int(Int64(limit))])
            }
        case .fetch(let e): return e
        case .httpStatus(let status, let url):
            return WireError(status == 404 || status == 410 ? .notFound : .unavailable,
                             "the origin answered \(status) for \(url.truncatedForMessages)", details: ["status": .int(Int64(status))])
        case .cancelled: return WireError(.cancelled, "cancelled")
        }
    }
}

/// Brings image bytes through the fetch pipeline (the daemon's loop thread); cancelling the calling task cancels
/// the fetch.
protocol ImageFetching: Sendable {
    func fetch(_ request: ImageRequest, maxBytes: Int) async throws(ImageError) -> FetchedImage
}

/// Counters for `stats`.
struct ImageStats: Sendable {
    var memoryHits: UInt64 = 0
    var diskHits: UInt64 = 0
    var downloads: UInt64 = 0
    var coalesced: UInt64 = 0
    var cancelled: UInt64 = 0
    var oversized: UInt64 = 0
    var invalid: UInt64 = 0
    var prefetched: UInt64 = 0
    var bytesDownloaded: UInt64 = 0
    var bytes = 0
    var entries = 0
    var memoryEvictions = 0
    var inFlight = 0
    var queued = 0

    func json(budget: Int, maxEntries: Int) -> JSONObject {
        ["memory_hits": .int(Int64(memoryHits)), "disk_hits": .int(Int64(diskHits)), "downloads": .int(Int64(downloads)),
         "coalesced": .int(Int64(coalesced)), "cancelled": .int(Int64(cancelled)), "oversized": .int(Int64(oversized)),
         "invalid": .int(Int64(invalid)), "prefetched": .int(Int64(prefetched)),
         "bytes_downloaded": .int(Int64(bytesDownloaded)), "bytes": .int(Int64(bytes)), "entries": .int(Int64(entries)),
         "evictions": .int(Int64(memoryEvictions)), "in_flight": .int(Int64(inFlight)), "queued": .int(Int64(queued)),
         "budget": .int(Int64(budget)), "max_entries": .int(Int64(maxEntries))]
    }
}
