import FerryImageFormat
import FerryProtocol

/// Identifies one waiting request: a connection's request (or anything unique). Cancelling it ends only its own
/// wait.
public struct ImageSubscriber: Hashable, Sendable {
    public let id: UInt64
    public init(id: UInt64) { self.id = id }
}

/// What `image.get` answers with.
public struct LoadedImage: Sendable {
    public var bytes: ArraySlice<UInt8>
    /// Format and size as displayed, from decoding it once.
    public var info: DecodedImage
    public var source: ImageSource
    /// The URL of the bytes, after redirects.
    public var url: String
    /// The version of the original these bytes are (or were made from): its ETag, Last-Modified or body digest.
    public var validator: String = ""
    /// Whether the response may be kept (not `no-store`, `private` or `no-cache`): nor may variants made of it.
    public var mayKeep = true
}

/// The daemon's image loader, shared by every client: a memory tier (exact byte budget and entry count), the disk
/// tier of the fetch pipeline's HTTP cache, and an in-flight table so that concurrent requests for one image — from
/// any clients — share one download.
///
/// The actor only coordinates; downloads run through `ImageFetching` (the fetch pipeline on the loop thread),
/// sniffing off the actor, and decoding through `ImageDecoding` (libvips on its own threads). An image is handed
/// out only once it decoded: every pixel, once per download; memory hits reuse that verdict. State is checked again after every `await`. A request is a subscriber of its
/// download: cancelling it ends its wait alone; the download is cancelled when its last subscriber goes, and keeps
/// its in-flight entry until its result is stored, so a request arriving meanwhile never starts a second download.
/// At most `maxConcurrent` downloads run at once; the rest wait in order, prefetches behind direct requests.
///
/// ```swift
/// let loader = ImageLoader(fetcher: fetcher, decoder: decoder, config: .init(), now: WallClock.nowMs)
/// let image = try await loader.load(ImageRequest(url: u), subscriber: ImageSubscriber(id: 7))
/// await loader.cancel(ImageSubscriber(id: 7))
/// ```
public actor ImageLoader {
    public struct Config: Sendable {
        public var memoryBudget = 128 * 1024 * 1024
        public var maxEntries = 1000
        public var maxPixels = 100_000_000
        public var maxConcurrent = 6
        /// Prefetches running at once, at most: a minority of `maxConcurrent`, so that prefetches of origins that
        /// never answer cannot hold the slots a direct request needs.
        public var maxPrefetching: Int?
        public var maxBytes = 64 * 1024 * 1024
        /// Variants made at once (the decoders' threads); an owner takes at most half while others wait.
        public var maxResizing = 2
        public init() {}
    }

    private let fetcher: ImageFetching
    let decoder: ImageDecoding
    /// Where variants are kept beyond the memory tier; nil: made again once out of memory.
    let variantStore: VariantStoring?
    public nonisolated let config: Config
    /// Wall-clock milliseconds, for the freshness of what the memory tier holds (injected: tests move it).
    let now: @Sendable () -> Int64
    var memory: ImageMemoryCache
    private var inFlight: [String: Download] = [:]
    private var subscriptions: [ImageSubscriber: String] = [:]
    /// Variants being made, by `ImageRequest.variantKey`, and who waits for which (ImageLoader+Variants).
    var variantJobs: [String: VariantJob] = [:]
    var variantSubscriptions: [ImageSubscriber: String] = [:]
    /// Subscribers the loader makes for itself (a variant job waiting for its original), apart from clients'.
    var nextInternalSubscriber: UInt64 = 1 << 62
    /// Who may resize now, and the jobs waiting for a slot (by ticket).
    var resizeSlots: ResizeSlots
    var resizeWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    var nextResizeTicket: UInt64 = 1
    private var queue = DownloadQueue()
    private var running = 0
    /// Downloads running per owner (client), for fair shares: one client holds at most half the slots.
    private var runningByOwner: [UInt64: Int] = [:]
    private var maxPerOwner: Int { max(1, config.maxConcurrent / 2) }
    /// Downloads running for prefetches only (none of their subscribers asked directly).
    private var runningPrefetches = 0
    private var prefetchLimit: Int { config.maxPrefetching ?? max(1, config.maxConcurrent / 3) }
    var stats = ImageStats()

    public init(fetcher: ImageFetching, decoder: ImageDecoding, variantStore: VariantStoring? = nil, config: Config,
                now: @escaping @Sendable () -> Int64) {
        self.fetcher = fetcher
        self.decoder = decoder
        self.variantStore = variantStore
        self.config = config
        self.now = now
        memory = ImageMemoryCache(budget: config.memoryBudget, maxEntries: config.maxEntries)
        resizeSlots = ResizeSlots(limit: config.maxResizing)
    }

    /// The image, from memory, or through one shared download.
    public func load(_ request: ImageRequest, subscriber: ImageSubscriber) async throws(ImageError) -> LoadedImage {
        // Cancelled before it got here (the client's cancel raced this call): never subscribe.
        if Task.isCancelled {
            stats.cancelled += 1
            throw .cancelled
        }
        if request.variant != nil { return try await loadVariant(request, subscriber: subscriber) }
        if request.cache.readsMemory, let image = memory.image(for: request.key, nowMs: now()) {
            stats.memoryHits += 1
            return LoadedImage(bytes: image.bytes, info: image.info, source: .memory, url: image.url, validator: image.validator)
        }
        let outcome: Result<LoadedImage, ImageError> = await withCheckedContinuation { continuation in
            subscribe(request, key: request.downloadKey, subscriber: subscriber, continuation)
        }
        return try outcome.get()
    }

    /// Ends one subscriber's wait (cancelled); the download stops when nobody else waits for it.
    public func cancel(_ subscriber: ImageSubscriber) {
        if variantSubscriptions[subscriber] != nil { return cancelVariant(subscriber) }
        guard let key = subscriptions.removeValue(forKey: subscriber), let download = inFlight[key],
              let continuation = download.subscribers.removeValue(forKey: subscriber) else { return }
        stats.cancelled += 1
        continuation.resume(returning: .failure(.cancelled))
        guard download.subscribers.isEmpty, !download.isPrefetch else { return }
        // Nobody waits: forget it now (a later request starts afresh) and stop the transfer.
        inFlight[key] = nil
        if queue.remove(download) { return }
        download.task?.cancel()
    }

    /// Queues downloads that warm the caches, behind every direct request; returns how many were queued.
    public func prefetch(_ requests: [ImageRequest]) -> Int {
        var queued = 0
        for var request in requests {
            request.isPrefetch = true
            if request.variant != nil {
                if prefetchVariant(request) { queued += 1 }
                continue
            }
            let key = request.downloadKey
            if inFlight[key] != nil || memory.image(for: request.key, nowMs: now()) != nil { continue }
            let download = Download(request: request, key: key, isPrefetch: true)
            inFlight[key] = download
            queue.append(download)
            queued += 1
        }
        stats.prefetched += UInt64(queued)
        pump()
        return queued
    }

    /// Drops the memory tier's copies of a URL; returns whether there were any.
    public func evict(url: String) -> Bool {
        let keys = memory.keys(forURL: url)
        for key in keys { memory.remove(key) }
        return !keys.isEmpty
    }

    /// New memory bounds (`--image-memory-limit`, `--image-max-entries`, changed live by a reload).
    public func resizeMemory(budget: Int, maxEntries: Int) {
        memory.resize(budget: budget, maxEntries: maxEntries)
    }

    /// Drops from the memory tier every image (and variant) of the URLs starting with `prefix` (`http.purge
    /// --prefix`); returns how many entries went.
    public func evict(urlPrefix prefix: String) -> Int {
        let keys = memory.keys(where: { $0.hasPrefix(prefix) })
        for key in keys { memory.remove(key) }
        return keys.count
    }

    public func snapshot() -> ImageStats {
        var s = stats
        s.bytes = memory.bytes
        s.budget = memory.budget
        s.maxEntries = memory.maxEntries
        s.entries = memory.count
        s.memoryEvictions = memory.evictions
        s.inFlight = inFlight.count
        s.queued = queue.count
        s.variantsWaiting = resizeSlots.waitingCount
        return s
    }

    // MARK: Downloads

    private func subscribe(_ request: ImageRequest, key: String, subscriber: ImageSubscriber,
                           _ continuation: CheckedContinuation<Result<LoadedImage, ImageError>, Never>) {
        subscriptions[subscriber] = key
        if let download = inFlight[key] {
            stats.coalesced += 1
            download.subscribers[subscriber] = continuation
            if !request.isPrefetch { promote(download) }
            return
        }
        let download = Download(request: request, key: key, isPrefetch: request.isPrefetch)
        download.subscribers[subscriber] = continuation
        inFlight[key] = download
        queue.append(download)
        pump()
    }

    /// A direct request for a prefetch: it moves to the front line.
    func promote(_ download: Download) {
        guard download.isPrefetch else { return }
        download.isPrefetch = false
        if download.runsAsPrefetch {
            // Running already: its slot is a direct request's now, and another prefetch may start.
            download.runsAsPrefetch = false
            runningPrefetches -= 1
            pump()
        }
        queue.promote(download)
    }

    /// The download a subscriber waits on, if any.
    func download(of subscriber: ImageSubscriber) -> Download? { subscriptions[subscriber].flatMap { inFlight[$0] } }

    /// Starts queued downloads while fewer than `maxConcurrent` run.
    private func pump() {
        while running < config.maxConcurrent,
              let download = queue.next(prefetchAllowed: runningPrefetches < prefetchLimit, running: { self.runningByOwner[$0] ?? 0 },
                                        maxPerOwner: maxPerOwner) {
            running += 1
            runningByOwner[download.request.owner, default: 0] += 1
            if download.isPrefetch {
                download.runsAsPrefetch = true
                runningPrefetches += 1
            }
            stats.downloads += 1
            let verifier = ImageVerifier(fetcher: fetcher, decoder: decoder, store: variantStore, maxPixels: config.maxPixels,
                                         maxBytes: config.maxBytes)
            download.task = Task {
                let result = await verifier.download(download.request)
                self.completed(download, result)
            }
        }
    }

    /// Back on the actor: store, then answer every subscriber, then let the next download start.
    private func completed(_ download: Download, _ verified: ImageVerifier.Verified) {
        running -= 1
        if verified.verdictReused { stats.verdictsReused += 1 }
        if let ms = verified.decodeMs {
            stats.decodes += 1
            stats.decodeMs += ms
            if case .failure = verified.outcome { stats.decodeFailures += 1 }
        }
        let result = verified.outcome
        let owner = download.request.owner
        if let n = runningByOwner[owner] { runningByOwner[owner] = n > 1 ? n - 1 : nil }
        if download.runsAsPrefetch {
            download.runsAsPrefetch = false
            runningPrefetches -= 1
        }
        defer { pump() }
        let current = inFlight[download.key] === download
        switch result {
        case .success(let (image, fetched)):
            stats.bytesDownloaded += UInt64(image.bytes.count)
            // Stored before the in-flight entry goes, so a request arriving now finds one or the other.
            if fetched.mayKeep && download.request.cache.storesResponses {
                if memory.insert(image, for: download.request.key) == .oversized { stats.oversized += 1 }
            }
            if current { inFlight[download.key] = nil }
            if fetched.source == .disk { stats.diskHits += 1 }
            let loaded = LoadedImage(bytes: image.bytes, info: image.info, source: fetched.source, url: image.url,
                                     validator: image.validator, mayKeep: fetched.mayKeep && download.request.cache.storesResponses)
            finish(download, .success(loaded))
        case .failure(let error):
            if current { inFlight[download.key] = nil }
            switch error {
            case .invalidImage, .decode(.undecodable), .decode(.tooLarge), .decode(.unknownFormat), .decode(.refusedFormat): stats.invalid += 1
            default: break
            }
            finish(download, .failure(error))
        }
    }

    private func finish(_ download: Download, _ outcome: Result<LoadedImage, ImageError>) {
        for (subscriber, continuation) in download.subscribers {
            subscriptions[subscriber] = nil
            continuation.resume(returning: outcome)
        }
        download.subscribers.removeAll()
    }
}

extension Duration {
    /// `Duration.milliseconds(1500).milliseconds == 1500.0`
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}
