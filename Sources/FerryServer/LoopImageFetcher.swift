import FerryFetch
import FerryHTTPCache
import FerryImages
import FerryLoop
import FerryProtocol

/// `ImageFetching` through the daemon's fetch pipeline: the request is handed to the loop thread (libuv is not
/// thread-safe, so only the loop touches transfers), runs as a `FetchJob` with its HTTP cache rules, and its typed
/// outcome comes back to the awaiting task. Cancelling that task cancels the job (the transfer stops when no other
/// waiter shares it).
///
/// ```swift
/// let loader = ImageLoader(fetcher: LoopImageFetcher(engine: engine, post: mailbox.post), config: .init(), now: WallClock.nowMs)
/// ```
final class LoopImageFetcher: ImageFetching, @unchecked Sendable {
    /// Runs a closure on the loop thread (the server's mailbox).
    private let post: LoopPost
    /// Touched on the loop thread only.
    private unowned(unsafe) let engine: FetchEngine

    static let defaultTimeoutMs = 60_000

    init(engine: FetchEngine, post: @escaping LoopPost) {
        self.engine = engine
        self.post = post
    }

    func fetch(_ request: ImageRequest, maxBytes: Int) async throws(ImageError) -> FetchedImage {
        let handle = FetchHandle()
        let outcome: Result<FetchedImage, ImageError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                handle.continuation = continuation
                post { [self] in self.start(request, maxBytes: maxBytes, handle) }
            }
        } onCancel: {
            post { handle.cancel() }
        }
        return try outcome.get()
    }

    static let slotOwner = UInt64.max

    /// On the loop thread.
    private func start(_ request: ImageRequest, maxBytes: Int, _ handle: FetchHandle) {
        guard handle.begin() else { return }
        // The request was checked when it arrived (`ImageArguments`, `image.prefetch`); this is its one FetchSpec.
        // Nobody may be waiting on a prefetch: every image download has a deadline of its own.
        var spec = FetchSpec(url: request.url, headers: request.headers, timeoutMs: request.timeoutMs ?? LoopImageFetcher.defaultTimeoutMs,
                             maxBytes: maxBytes, cacheMode: request.cache)
        // The image loader shares its downloads among its clients itself (its queue, prefetches behind); to the
        // transfer slots it is one owner.
        spec.owner = LoopImageFetcher.slotOwner
        let job = FetchJob(engine: engine, spec: spec) { result in
            // The body may still be arriving (or be in the store's file): the image needs all of it, bounded.
            guard case .success(let outcome) = result, (200..<300).contains(outcome.status) else {
                // An error status's body is not read: the job leaves its transfer (the last to leave stops it),
                // which would otherwise go on for nobody, holding an image slot's connection until it ends.
                handle.job?.cancel()
                return handle.resume(LoopImageFetcher.image(from: result, body: []))
            }
            outcome.body.collect(limit: maxBytes) { body in
                switch body {
                case .success(let bytes): handle.resume(LoopImageFetcher.image(from: result, body: bytes))
                case .failure(let failure): handle.resume(.failure(.fetch(failure.wireError)))
                }
            }
        }
        handle.job = job
        job.start()
    }

    /// A fetch outcome as an image download: an HTTP error status is an error here, and the response's freshness
    /// says how long the memory tier may keep serving it.
    static func image(from result: Result<FetchOutcome, FetchFailure>, body: ArraySlice<UInt8>) -> Result<FetchedImage, ImageError> {
        switch result {
        case .failure(let failure): return .failure(.fetch(failure.wireError))
        case .success(let outcome):
            guard (200..<300).contains(outcome.status) else { return .failure(.httpStatus(outcome.status, url: outcome.url)) }
            let cc = CacheControl(responseHeaders: outcome.headers)
            let remaining = outcome.freshForSeconds
            return .success(FetchedImage(body: body, url: outcome.url,
                                         source: outcome.cache.servedFromStore ? .disk : .network,
                                         freshUntilMs: WallClock.nowMs() + max(0, remaining) * 1000,
                                         mayKeep: !cc.noStore && !cc.noCache && !cc.isPrivate && remaining > 0,
                                         validator: outcome.headers.first("etag").map { "etag " + $0 }
                                             ?? outcome.headers.first("last-modified").map { "last-modified " + $0 }))
        }
    }
}

/// The meeting point of one image fetch's three parties — the awaiting task, the loop thread's job and a cancel —
/// so that the continuation is resumed exactly once. The continuation is set before `start` is posted; everything
/// else happens on the loop thread, in the order the posts arrive (a cancel may come before the start).
private final class FetchHandle: @unchecked Sendable {
    var continuation: CheckedContinuation<Result<FetchedImage, ImageError>, Never>?
    var job: FetchJob?
    private var started = false
    private var cancelled = false
    private(set) var isDone = false

    /// Called by `start`: false when the fetch must not begin (cancelled already, answered with `.cancelled`).
    func begin() -> Bool {
        started = true
        if cancelled { resume(.failure(.cancelled)) }
        return !isDone
    }

    func resume(_ outcome: Result<FetchedImage, ImageError>) {
        guard !isDone else { return }
        isDone = true
        job = nil
        continuation?.resume(returning: outcome)
        continuation = nil
    }

    func cancel() {
        cancelled = true
        job?.cancel()
        // Before `start` ran, the continuation may not be visible here yet: `start` answers instead.
        if started { resume(.failure(.cancelled)) }
    }
}
