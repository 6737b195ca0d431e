// The protocol's closed vocabularies: every word that travels as a string in arguments, results and events, as one
// enum each, shared by the daemon, the Swift client and the CLI (and mirrored in the Python client's `ferry.wire`).
// The raw values are the bytes on the wire (PROTOCOL.md); nothing else spells them.
//
//     CacheStatus(rawValue: "revalidated")?.servedFromStore   // true
//     EventName.progress.rawValue                              // "progress"

/// How the shared HTTP cache answered a `fetch` (`result.cache.status`).
public enum CacheStatus: String, Sendable, CaseIterable {
    /// A fresh stored response.
    case hit
    /// A stale stored response (stale-while-revalidate, stale-if-error).
    case stale
    /// A stored response the origin confirmed with 304.
    case revalidated
    /// The response of an identical request in flight, shared.
    case coalesced
    /// Nothing usable was stored: the origin answered.
    case miss
    /// The request's cache mode skipped the cache (no-store, reload).
    case bypass

    /// Whether the body came out of the store rather than off the network.
    public var servedFromStore: Bool { self == .hit || self == .stale || self == .revalidated }
}

/// Where an `image.get` found its bytes (`result.source`).
public enum ImageSource: String, Sendable, CaseIterable {
    /// The image loader's memory tier.
    case memory
    /// The HTTP cache (memory or disk of the storage engine).
    case disk
    /// The origin.
    case network
    /// A variant made now from its original (`image.get` with a size or format).
    case made
}

/// How an image variant fills its box (`image.get` `fit`): the words of CSS `object-fit` and sharp.
public enum ImageFit: String, Sendable, CaseIterable {
    /// As large as fits inside the box, aspect kept: one side may be shorter than the box (the default).
    case inside
    /// Fills the box exactly, aspect kept, the overflow cropped around the centre.
    case cover
    /// Exactly the box, the image inside it, the rest transparent (or white, for JPEG).
    case contain
    /// Exactly the box, stretched.
    case fill
    /// As small as covers the box, aspect kept, nothing cropped: one side may be longer than the box.
    case outside
}

/// The encoding of an image variant (`image.get` `format`).
public enum ImageOutputFormat: String, Sendable, CaseIterable {
    /// The original's format when it can be written (JPEG, PNG, WebP, GIF, AVIF, HEIC), PNG otherwise.
    case original
    case jpeg
    case png
    case webp
    case avif
}

/// What a daemon offers beyond its protocol version's core, listed in the `hello` result's `capabilities`; a client
/// uses one only when offered.
public enum Capability: String, Sendable, CaseIterable {
    /// Large reply bodies as descriptors (`SCM_RIGHTS`) for requests with `body_fd: true`: the result names
    /// `body_fd: {offset, length}` and the frame carries the descriptor instead of the bytes (PROTOCOL.md §5).
    case bodyFD = "body_fd"
}

/// The names of event frames (`"event"`).
public enum EventName: String, Sendable, CaseIterable {
    /// `ping` with `events`: `{n}`.
    case tick
    /// A part of a body too large for one frame: `{offset}`.
    case chunk
    /// `fetch` with `progress`: `{received, total?}`.
    case progress
    /// `fetch` whose body streams: the result's fields known before the body (status, headers, url, cache), sent
    /// before the first `chunk`.
    case head
}

/// How a `fetch` or `image.get` uses the shared HTTP cache: the WHATWG Fetch `RequestCache` modes (`"cache"`).
/// Their caching rules are in FerryHTTPCache (`consultsCache`, `storesResponses`, …).
public enum CacheMode: String, Sendable, CaseIterable {
    case `default`
    case noStore = "no-store"
    case reload
    case noCache = "no-cache"
    case forceCache = "force-cache"
    case onlyIfCached = "only-if-cached"
}

/// What a `fetch` does with a redirect (`"redirect"`).
public enum RedirectMode: String, Sendable, CaseIterable {
    /// Follow it, through the cache, hop by hop.
    case follow
    /// Answer with the 3xx itself.
    case manual
    /// Fail with `failed_precondition`.
    case error
}

/// How an operation uses the request body (`describe`'s `body`).
public enum BodyKind: String, Sendable, CaseIterable {
    /// Takes none.
    case none
    /// Sends it back (`ping`).
    case echo
    /// Stores it as a value (`cache.set`).
    case value
    /// Sends it as the HTTP request body (`fetch`).
    case http

    /// Whether a body may arrive in several frames (continuation frames).
    public var takesBody: Bool { self != .none }
}
