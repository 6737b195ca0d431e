import FerryFetch
import FerryHTTPCache
import FerryImages
import FerryProtocol

/// Carries a loop-thread object through a task that hops to the image loader and back; only the loop thread
/// touches what it holds (the reply is posted back through the mailbox).
struct LoopBound<T>: @unchecked Sendable {
    let value: T
}

/// Runs a closure on the loop thread, from any thread (`LoopMailbox.post`).
typealias LoopPost = @Sendable (@escaping @Sendable () -> Void) -> Void

/// What every `image.*` operation is built with: the loader (nil when the daemon has none) and the way back to the
/// loop thread for the answer.
class ImageOperation {
    let post: LoopPost
    private let loader: ImageLoader?

    init(loader: ImageLoader?, post: @escaping LoopPost) {
        self.loader = loader
        self.post = post
    }

    /// The loader, or nil after answering `unavailable`.
    func loader(for request: RequestContext) -> ImageLoader? {
        if loader == nil { request.fail(.unavailable, "images are not available in this daemon") }
        return loader
    }
}

/// `image.get`: one image through the shared loader; the reply body is the image's bytes.
final class ImageGetOperation: ImageOperation, OperationHandler {
    let descriptor = OperationCatalog.imageGet
    /// Subscriber ids, unique for the daemon's life (loop thread only).
    private var nextSubscriber: UInt64 = 1

    func start(_ request: RequestContext) {
        guard let loader = loader(for: request) else { return }
        let imageRequest: ImageRequest
        switch ImageArguments.request(request.args) {
        case .failure(let failure): return request.fail(failure.wireError)
        case .success(var r):
            r.owner = request.clientID  // its share of the download slots is this connection's
            imageRequest = r
        }
        let subscriber = ImageSubscriber(id: nextSubscriber)
        nextSubscriber += 1
        let post = self.post, bound = LoopBound(value: request)
        let task = Task {
            do throws(ImageError) {
                let image = try await loader.load(imageRequest, subscriber: subscriber)
                post {
                    bound.value.succeed(["format": .string(image.info.format), "width": .int(Int64(image.info.width)),
                                         "height": .int(Int64(image.info.height)), "orientation": .int(Int64(image.info.orientation)),
                                         "pages": .int(Int64(image.info.pages)), "size": .int(Int64(image.bytes.count)),
                                         "source": .string(image.source.rawValue), "url": .string(image.url)], body: image.bytes)
                }
            } catch {
                post { bound.value.fail(error.wireError) }
            }
        }
        // Both: the task's cancellation stops a load that has not subscribed yet, the loader's cancel a waiting one.
        request.onCancel = {
            task.cancel()
            Task { await loader.cancel(subscriber) }
        }
    }
}

/// `image.prefetch`: queues downloads that warm the caches and answers at once; with variant arguments, the same
/// variant of each URL is made (its original's download a prefetch too).
final class ImagePrefetchOperation: ImageOperation, OperationHandler {
    let descriptor = OperationCatalog.imagePrefetch

    func start(_ request: RequestContext) {
        guard let loader = loader(for: request) else { return }
        guard case .array(let items)? = request.args["urls"], !items.isEmpty, items.count <= 1000 else {
            return request.fail(.invalidArgument, "\"urls\" must be an array of 1 to 1000 URLs")
        }
        let variant: ImageVariant?
        switch Result(catching: { () throws(FetchFailure) in try ImageVariantArguments.variant(request.args) }) {
        case .success(let v): variant = v
        case .failure(let failure): return request.fail(failure.wireError)
        }
        var requests: [ImageRequest] = []
        for item in items {
            guard case .string(let url) = item else { return request.fail(.invalidArgument, "each of \"urls\" must be a string") }
            if let problem = FetchSpec.urlProblem(url) { return request.fail(.invalidArgument, problem) }
            var r = ImageRequest(url: url)
            r.owner = request.clientID
            r.variant = variant
            requests.append(r)
        }
        let post = self.post, bound = LoopBound(value: request)
        Task {
            let queued = await loader.prefetch(requests)
            post { bound.value.succeed(["queued": .int(Int64(queued))]) }
        }
    }
}

/// `image.evict`: drops a URL's images from the loader's memory tier.
final class ImageEvictOperation: ImageOperation, OperationHandler {
    let descriptor = OperationCatalog.imageEvict

    func start(_ request: RequestContext) {
        guard let loader = loader(for: request) else { return }
        guard case .string(let url)? = request.args["url"] else { return request.fail(.invalidArgument, "\"url\" is required (a string)") }
        if let problem = FetchSpec.urlProblem(url) { return request.fail(.invalidArgument, problem) }
        let key = CacheKeyURL.normalize(url) ?? url
        let post = self.post, bound = LoopBound(value: request)
        Task {
            let evicted = await loader.evict(url: key)
            post { bound.value.succeed(["evicted": .bool(evicted)]) }
        }
    }
}

/// Reading `image.get` arguments: the ones it shares with `fetch` (url, headers, cache, timeout_ms), checked by
/// `FetchArguments`, so both operations refuse the same things with the same messages.
enum ImageArguments {
    static func request(_ args: JSONObject) -> Result<ImageRequest, FetchFailure> {
        do throws(FetchFailure) {
            // In fetch's order, so both refuse the first problem alike.
            let url = try FetchArguments.url(args), headers = try FetchArguments.headers(args)
            let timeoutMs = try FetchArguments.timeoutMs(args), cache = try FetchArguments.cacheMode(args)
            var request = ImageRequest(url: url, headers: headers, cache: cache, timeoutMs: timeoutMs)
            request.variant = try ImageVariantArguments.variant(args)
            return .success(request)
        } catch {
            return .failure(error)
        }
    }
}
