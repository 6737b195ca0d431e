import FerryFetch
import FerryHTTPCache
import FerryImages
import FerryLoop
import FerryProtocol
import FerryStore

/// What the `http.*` operations are built with: the fetch engine's stored responses (`ResponseCatalog`), and the
/// image loader, whose memory tier a purge empties too.
class HTTPCacheOperation {
    let engine: FetchEngine?
    let loader: ImageLoader?
    let post: LoopPost

    init(engine: FetchEngine?, loader: ImageLoader?, post: @escaping LoopPost) {
        self.engine = engine
        self.loader = loader
        self.post = post
    }

    func catalog(for request: RequestContext) -> ResponseCatalog? {
        guard let engine else {
            request.fail(.unavailable, "the HTTP cache is not available in this daemon (no fetch engine)")
            return nil
        }
        return engine.catalog
    }

    /// A URL argument in the form responses are stored under.
    static func normalizedURL(_ args: JSONObject) throws(CacheArguments.Invalid) -> String {
        guard let v = args["url"], v != .null else { throw CacheArguments.Invalid(message: "\"url\" is required") }
        guard case .string(let url) = v else { throw CacheArguments.Invalid(message: "\"url\" must be a string") }
        if let problem = FetchSpec.urlProblem(url) { throw CacheArguments.Invalid(message: problem) }
        guard let normalized = CacheKeyURL.normalize(url) else { throw CacheArguments.Invalid(message: "\"url\" is not an absolute http(s) URL") }
        return normalized
    }

    static var nowSeconds: Int64 { WallClock.nowMs() / 1000 }
}

/// `http.list`: the URLs the shared HTTP cache holds, in byte order, a page at a time.
final class HTTPListOperation: HTTPCacheOperation, OperationHandler {
    let descriptor = OperationCatalog.httpList

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let prefix = try CacheArguments.string(request.args, "prefix") ?? ""
            let cursor = try CacheArguments.string(request.args, "cursor")
            let limit = try CacheArguments.limit(request.args)
            guard let catalog = catalog(for: request) else { return }
            catalog.list(prefix: prefix, after: cursor, limit: limit, now: HTTPCacheOperation.nowSeconds) { result in
                request.answer(result) { page in
                    var reply: JSONObject = ["urls": .array(page.urls.map { .object($0.listed) })]
                    if let cursor = page.cursor { reply["cursor"] = .string(cursor) }
                    request.succeed(reply)
                }
            }
        }
    }
}

/// `http.show`: what is stored for one URL — its responses with their headers, age and freshness; partitions by count.
final class HTTPShowOperation: HTTPCacheOperation, OperationHandler {
    let descriptor = OperationCatalog.httpShow

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let url = try HTTPCacheOperation.normalizedURL(request.args)
            guard let catalog = catalog(for: request) else { return }
            catalog.show(url: url, now: HTTPCacheOperation.nowSeconds) { result in
                request.answer(result) { cached in
                    guard let cached else { return request.fail(.notFound, "the HTTP cache holds nothing for \(url.truncatedForMessages)") }
                    var reply = cached.summary
                    reply["responses"] = .array(cached.responses.map { .object($0.shown) })
                    request.succeed(reply)
                }
            }
        }
    }
}

/// `http.purge`: removes what is stored for a URL (`url`) or for every URL starting with `prefix`, in every
/// variant and partition, and the image loader's copies in memory.
final class HTTPPurgeOperation: HTTPCacheOperation, OperationHandler {
    let descriptor = OperationCatalog.httpPurge

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let prefix = try CacheArguments.string(request.args, "prefix")
            let hasURL = request.args["url"].map { $0 != .null } ?? false
            guard hasURL != (prefix != nil) else { throw CacheArguments.Invalid(message: "give \"url\" or \"prefix\", one of them") }
            if prefix == "" { throw CacheArguments.Invalid(message: "\"prefix\" must not be empty (it would purge the whole HTTP cache: give \"http\")") }
            let url = hasURL ? try HTTPCacheOperation.normalizedURL(request.args) : nil
            guard let catalog = catalog(for: request) else { return }
            let loader = self.loader, post = self.post, bound = LoopBound(value: request)
            let answer: (Result<Int, StoreError>) -> Void = { result in
                request.answer(result) { purged in
                    guard let loader else { return request.succeed(["purged": .int(Int64(purged))]) }
                    Task {
                        if let url { _ = await loader.evict(url: url) } else if let prefix { _ = await loader.evict(urlPrefix: prefix) }
                        post { bound.value.succeed(["purged": .int(Int64(purged))]) }
                    }
                }
            }
            if let url { catalog.purge(url: url) { answer($0.map { $0 > 0 ? 1 : 0 }) } } else if let prefix { catalog.purge(prefix: prefix, answer) }
        }
    }
}

extension CachedURL {
    /// The fields `http.list` and `http.show` share.
    var summary: JSONObject {
        var o: JSONObject = ["url": .string(url), "bytes": .int(Int64(bytes)), "partitions": .int(Int64(partitions))]
        if let vary { o["vary"] = .string(vary) }
        if partial { o["partial"] = .bool(true) }
        return o
    }

    /// A line of `http.list`: the summary, and the shared response's status and freshness when there is one
    /// (with `Vary`, how many variants).
    var listed: JSONObject {
        var o = summary
        if vary != nil {
            o["variants"] = .int(Int64(responses.count))
        } else if let r = responses.first {
            o["status"] = .int(Int64(r.status))
            o["size"] = .int(Int64(r.bodySize))
            o["age_s"] = .int(r.age)
            o["fresh"] = .bool(r.fresh)
        }
        return o
    }
}

extension CachedResponse {
    var shown: JSONObject {
        var o: JSONObject = [
            "status": .int(Int64(status)),
            "headers": .array(headers.pairs.map { .array([.string($0.name), .string($0.value)]) }),
            "stored_at": .int(storedAt * 1000), "age_s": .int(age), "lifetime_s": .int(lifetime), "fresh": .bool(fresh),
            "size": .int(Int64(bodySize)),
        ]
        if let variantKey { o["variant"] = .string(variantKey) }
        return o
    }
}
