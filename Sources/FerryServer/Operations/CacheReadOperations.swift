import FerryCache
import FerryLoop
import FerryBytes
import FerryProtocol
import FerryStore

/// `cache.get`: a memory hit is answered on the loop thread at once; a miss goes to the disk worker.
final class CacheGetOperation: CacheOperation, OperationHandler {
    let descriptor = OperationCatalog.cacheGet

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let key = try CacheArguments.key(request.args)
            if let problem = request.bodyDescriptorArgumentProblem { throw CacheArguments.Invalid(message: problem) }
            // Values kept as blob files are not read whole: they are read as the client takes them.
            store.read(key, now: WallClock.nowMs(), streamAbove: store.config.inlineThreshold) { [store] result in
                request.answer(result) { found in
                    guard let (value, source) = found else { return request.failNotFound(key) }
                    var reply: JSONObject = ["size": .int(Int64(value.size)), "created_at": .int(value.createdAt)]
                    if let e = value.expiresAt { reply["expires_at"] = .int(e) }
                    reply["source"] = .string(source.rawValue)
                    let body: ReplyBody
                    switch value {
                    case .entry(let entry): body = .bytes(entry.value[...])
                    case .blob(let blob): body = .blob(blob, store: store)
                    }
                    if request.succeedWithDescriptor(reply, body: body) { return }
                    switch body {
                    case .bytes(let bytes): request.succeed(reply, body: bytes)
                    default: request.succeed(reply, streaming: body)
                    }
                }
            }
        }
    }
}

extension CacheGetOperation: HotOperation {
    /// A value in the memory tier, answered at once; anything else (a miss, a bad key, a large value) is the
    /// general path's.
    func answerHot(_ request: HotRequest, _ reply: HotReply) -> Bool {
        let e = request.envelope
        guard e.ttlMs == nil, e.url == nil, let key = request.cacheKeyProbe,
              let entry = store.memoryHit(key, now: WallClock.nowMs(), maxBytes: reply.maxBody(bodyFD: e.bodyFD))
        else { return false }
        // Read out first: a closure that captured the entry retained its value once more.
        let (size, createdAt, expiresAt) = (entry.value.count, entry.createdAt, entry.expiresAt)
        entry.value.withUnsafeBytes { body in
            // The general path's reply, member for member: `size`, `created_at`, `expires_at` when set, `source`.
            reply.succeed(body: body) { out in
                out.ascii("{\"size\":")
                out.int(Int64(size))
                out.ascii(",\"created_at\":")
                out.int(createdAt)
                if let expires = expiresAt {
                    out.ascii(",\"expires_at\":")
                    out.int(expires)
                }
                out.ascii(",\"source\":\"memory\"}")
            }
        }
        return true
    }
}

/// `cache.list`: one page of live keys in byte order.
final class CacheListOperation: CacheOperation, OperationHandler {
    let descriptor = OperationCatalog.cacheList

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let namespace = try CacheArguments.namespace(request.args)
            let prefix = try CacheArguments.string(request.args, "prefix") ?? ""
            let cursor = try CacheArguments.string(request.args, "cursor")
            let limit = try CacheArguments.limit(request.args)
            store.list(namespace: namespace, prefix: prefix, cursor: cursor, limit: limit, now: WallClock.nowMs()) { result in
                request.answer(result) { page in
                    var reply: JSONObject = ["keys": .array(page.keys.map { k in
                        var o: JSONObject = ["key": .string(k.key), "size": .int(Int64(k.size))]
                        if let e = k.expiresAt { o["expires_at"] = .int(e) }
                        return .object(o)
                    })]
                    if page.more, let last = page.keys.last { reply["cursor"] = .string(last.key) }
                    request.succeed(reply)
                }
            }
        }
    }
}
