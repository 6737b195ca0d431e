import FerryProtocol

/// Brings image bytes for the loader: the daemon implements it with its fetch engine on the loop thread
/// (`LoopImageFetcher`), tests with a fake they release by hand. Cancelling the calling task cancels the fetch.
///
/// ```swift
/// let fetched = try await fetcher.fetch(ImageRequest(url: u), maxBytes: 64 << 20)
/// fetched.source   // .disk when the HTTP cache had it, .network otherwise
/// ```
public protocol ImageFetching: Sendable {
    func fetch(_ request: ImageRequest, maxBytes: Int) async throws(ImageError) -> FetchedImage
}

/// What the fetch brought back for an image.
public struct FetchedImage: Sendable {
    public var body: ArraySlice<UInt8>
    /// The URL the bytes came from (after redirects).
    public var url: String
    /// `.disk` (the HTTP cache had it) or `.network`.
    public var source: ImageSource
    /// Until when the memory tier may serve it without asking (from the response's freshness).
    public var freshUntilMs: Int64
    /// False for `no-store`, `private` (this memory tier is shared by every client) and `no-cache` (no reuse without
    /// asking): not kept in memory either.
    public var mayKeep: Bool
    /// What identifies this version of the image: its ETag, else its Last-Modified; nil: neither (the loader then
    /// uses a digest of the body). Variants are stored under it.
    public var validator: String?

    public init(body: ArraySlice<UInt8>, url: String, source: ImageSource, freshUntilMs: Int64, mayKeep: Bool, validator: String? = nil) {
        self.validator = validator
        self.body = body
        self.url = url
        self.source = source
        self.freshUntilMs = freshUntilMs
        self.mayKeep = mayKeep
    }
}
