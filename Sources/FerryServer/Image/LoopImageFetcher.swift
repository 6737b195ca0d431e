import FerryHTTPCache
import FerryProtocol

/// `ImageFetching` through the daemon's fetch pipeline: the request is handed to the loop thread (libuv is not
/// thread-safe, so only the loop touches transfers), runs as a `FetchJob` with its HTTP cache rules, and its outcome
/// comes back to the awaiting task. Cancelling that task cancels the job (the transfer stops when no other waiter
/// shares it).
final class LoopImageFetcher: ImageFetching, @unchecked Sendable {
    /// Runs a closure on the loop thread (the server's mailbox).
    private let post: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// Touched on the loop thread only.
    private unowned(unsafe) let service: FetchService

    static let defaultTimeoutMs = 60_000

    init(service: FetchService, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.service = service
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

    /// On the loop thread.
    private func start(_ request: ImageRequest, maxBytes: Int, _ handle: FetchHandle) {
        guard handle.begin() else { return }
        // The request's arguments were checked when it arrived (`ImageArguments`, `image.prefetch`). Nobody may be
        // waiting on a prefetch: every image download has a deadline of its own.
        let spec = FetchSpec(url: request.url, method: "GET", headers: request.headers.map { ($0.name, $0.value) }, body: [],
                             timeoutMs: request.timeoutMs ?? LoopImageFetcher.defaultTimeoutMs, redirect: .follow,
                             maxRedirects: 10, maxBytes: maxBytes, cacheMode: request.cache, progress: false)
        let internalFetch = InternalFetch { outcome in handle.resume(LoopImageFetcher.image(from: outcome)) }
        handle.fetch = internalFetch
        FetchJob(responder: internalFetch, service: service, spec: spec).start()
    }

    /// A fetch reply as an image download: an HTTP error status is an error here, and the response's freshness
    /// says how long the memory tier may keep serving it.
    static func image(from outcome: Result<(JSONObject, [UInt8]), WireError>) -> Result<FetchedImage, ImageError> {
        switch outcome {
        case .failure(let e): return .failure(.fetch(e))
        case .success(let (result, body)):
            let status = Int(result["status"]?.intValue ?? 0)
            let url = result["url"]?.stringValue ?? ""
            guard (200..<300).contains(status) else { return .failure(.httpStatus(status, url: url)) }
            let pairs: [(String, String)] = (result["headers"]?.arrayValue ?? []).compactMap {
                guard let a = $0.arrayValue, a.count == 2, let n = a[0].stringValue, let v = a[1].stringValue else { return nil }
                return (n, v)
            }
            let headers = HTTPFields(pairs)
            let cacheStatus = result["cache"]?["status"]?.stringValue.flatMap(CacheStatus.init(rawValue:)) ?? .miss
            let cc = CacheControl(responseHeaders: headers)
            let now = WallClock.nowMs()
            let stored = StoredResponse(status: status, headers: headers, requestTime: now / 1000, responseTime: now / 1000)
            let remaining = freshnessLifetime(response: stored) - (ageValue(headers) ?? 0)
            let source: ImageSource = cacheStatus.servedFromStore ? .disk : .network
            return .success(FetchedImage(body: body, url: url, source: source, freshUntilMs: now + max(0, remaining) * 1000,
                                         mayKeep: !cc.noStore && !cc.noCache && !cc.isPrivate && remaining > 0))
        }
    }
}

/// The meeting point of one image fetch's three parties — the awaiting task, the loop thread's job and a cancel —
/// so that the continuation is resumed exactly once. The continuation is set before `start` is posted; everything
/// else happens on the loop thread, in the order the posts arrive (a cancel may come before the start).
private final class FetchHandle: @unchecked Sendable {
    var continuation: CheckedContinuation<Result<FetchedImage, ImageError>, Never>?
    var fetch: InternalFetch?
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
        fetch = nil
        continuation?.resume(returning: outcome)
        continuation = nil
    }

    func cancel() {
        cancelled = true
        fetch?.cancel()
        // Before `start` ran, the continuation may not be visible here yet: `start` answers instead.
        if started { resume(.failure(.cancelled)) }
    }
}
