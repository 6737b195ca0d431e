import FerryProtocol

/// An image as ferryd's loader returns it.
public struct FerryImage: Sendable, Equatable {
    public var bytes: [UInt8]
    /// What decoding found: "jpeg", "png", "gif", "webp", "avif", "heic", "tiff", "svg", "pdf", "jxl", "bmp", …
    public var format: String
    /// As displayed: EXIF orientation applied (a stored 300×200 with orientation 6 is 200×300).
    public var width: Int
    public var height: Int
    /// EXIF orientation 1…8 of the bytes (1: none): what a viewer drawing them must still apply.
    public var orientation: Int = 1
    /// Frames of an animation, pages of a document; 1 otherwise.
    public var pages: Int = 1
    /// Where the loader found it; nil for a word this version does not know.
    public var source: ImageSource?
    /// The URL of the bytes, after redirects.
    public var url: String
}

extension FerryClient {
    /// An image through the daemon's shared loader: from memory, the disk cache, or one download shared with every
    /// client asking at the same time. Cancelling the calling task cancels this request only (the download stops
    /// when nobody waits for it any more), the way a reused table cell cancels its load:
    ///
    /// ```swift
    /// cell.task = Task { cell.imageView.image = try? await makeImage(client.image(posterURL).bytes) }
    /// // on reuse:
    /// cell.task?.cancel()
    /// ```
    ///
    /// With a `variant`, the daemon makes it once for every client and keeps it while the original is unchanged:
    ///
    /// ```swift
    /// let thumb = try await client.image(posterURL, variant: .init(width: 88, height: 88, fit: .cover, format: .webp, density: 2))
    /// ```
    public func image(_ url: String, variant: ImageVariant? = nil, headers: [HTTPHeader] = [],
                      cache: FetchRequest.CacheMode? = nil, timeout: Duration? = nil) async throws -> FerryImage {
        var args: JSONObject = ["url": .string(url)]
        for (name, value) in variant?.arguments ?? [:] { args[name] = value }
        if !headers.isEmpty { args["headers"] = .array(headers.map { .array([.string($0.name), .string($0.value)]) }) }
        if let cache { args["cache"] = .string(cache.rawValue) }
        if let timeout { args["timeout_ms"] = .int(FerryClient.milliseconds(timeout)) }
        let reply = try await call(.imageGet, args)
        let r = reply.result
        return FerryImage(bytes: reply.body, format: r["format"]?.stringValue ?? "", width: Int(r["width"]?.intValue ?? 0),
                          height: Int(r["height"]?.intValue ?? 0), orientation: Int(r["orientation"]?.intValue ?? 1),
                          pages: Int(r["pages"]?.intValue ?? 1),
                          source: r["source"]?.stringValue.flatMap(ImageSource.init(rawValue:)), url: r["url"]?.stringValue ?? url)
    }

    /// Queues downloads that warm the daemon's caches, behind every direct request; with a `variant`, that variant
    /// of each URL is made too (the thumbnails a table is about to show). Returns how many were queued.
    ///
    /// ```swift
    /// try await client.prefetchImages(nextPage.map(\.posterURL), variant: .init(width: 88, height: 88, fit: .cover))
    /// ```
    @discardableResult
    public func prefetchImages(_ urls: [String], variant: ImageVariant? = nil) async throws -> Int {
        var args: JSONObject = ["urls": .array(urls.map { .string($0) })]
        for (name, value) in variant?.arguments ?? [:] { args[name] = value }
        return Int(try await call(.imagePrefetch, args).result["queued"]?.intValue ?? 0)
    }

    /// Drops a URL's image from the loader's memory tier.
    @discardableResult
    public func evictImage(_ url: String) async throws -> Bool {
        try await call(.imageEvict, ["url": .string(url)]).result["evicted"]?.boolValue ?? false
    }
}
