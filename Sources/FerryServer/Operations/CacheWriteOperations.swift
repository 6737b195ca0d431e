import FerryCache
import FerryLoop
import FerryProtocol
import FerryStore

/// `cache.set`: the value is the request body; acknowledged once it is on disk (journal or index).
final class CacheSetOperation: CacheOperation, OperationHandler {
    let descriptor = OperationCatalog.cacheSet
    /// The two replies, made once (a reply object per set was a measurable share of one).
    private static let stored: JSONObject = ["stored": true], notStored: JSONObject = ["stored": false]

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let key = try CacheArguments.key(request.args)
            let ttl = try CacheArguments.ttl(request.args) ?? nil
            let ifAbsent = try CacheArguments.bool(request.args, "if_absent")
            store.set(key, value: request.body, ttlMs: ttl, ifAbsent: ifAbsent, now: WallClock.nowMs()) { result in
                request.answer(result) { request.succeed($0 ? CacheSetOperation.stored : CacheSetOperation.notStored) }
            }
        }
    }
}

extension CacheSetOperation: HotOperation {
    /// A plain set of a small value (no `if_absent`, a valid key and TTL, room on disk): journaled now and answered
    /// when the record is written at the end of the iteration (`Connection.setSettled`), without a
    /// `RequestContext`, argument tree or reply object; anything else, errors included, is the general path's.
    func answerHot(_ request: HotRequest, _ reply: HotReply) -> Bool {
        let e = request.envelope
        guard e.bodyFD == nil, e.url == nil, let key = request.cacheKey else { return false }
        if let ttl = e.ttlMs, ttl < 1 || ttl > CacheEntry.maxTTLms { return false }
        // In flight before the store may answer it.
        reply.connection.setPending(reply.id, counters: reply.counters)
        guard store.setSettling(key, value: Array(request.body), ttlMs: e.ttlMs,
                                now: WallClock.nowMs(), ackTo: reply.connection, id: reply.id) else {
            reply.connection.dropPending(reply.id)
            return false
        }
        return true
    }
}

/// `cache.delete`.
final class CacheDeleteOperation: CacheOperation, OperationHandler {
    let descriptor = OperationCatalog.cacheDelete

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let key = try CacheArguments.key(request.args)
            store.delete(key, now: WallClock.nowMs()) { result in
                request.answer(result) { request.succeed(["deleted": .bool($0)]) }
            }
        }
    }
}

/// `cache.touch`: a new TTL (or `null`: never expire) for a live entry.
final class CacheTouchOperation: CacheOperation, OperationHandler {
    let descriptor = OperationCatalog.cacheTouch

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let key = try CacheArguments.key(request.args)
            let ttl = try CacheArguments.ttl(request.args, required: true) ?? nil
            store.touch(key, ttlMs: ttl, now: WallClock.nowMs()) { result in
                request.answer(result) { touched in
                    guard let expiresAt = touched else { return request.failNotFound(key) }
                    request.succeed(expiresAt.map { ["expires_at": .int($0)] } ?? JSONObject())
                }
            }
        }
    }
}

/// `cache.clear`: removes every entry of a namespace.
final class CacheClearOperation: CacheOperation, OperationHandler {
    let descriptor = OperationCatalog.cacheClear

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let namespace = try CacheArguments.namespace(request.args)
            store.clear(namespace: namespace, now: WallClock.nowMs()) { result in
                request.answer(result) { request.succeed(["removed": .int(Int64($0))]) }
            }
        }
    }
}

/// `cache.incr`: adds `by` (default 1) to the integer stored at a key, atomically in the daemon (`CacheStore.incr`);
/// a missing key counts from 0 and takes `ttl_ms`, an existing one keeps its expiry.
final class CacheIncrOperation: CacheOperation, OperationHandler {
    let descriptor = OperationCatalog.cacheIncr

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let key = try CacheArguments.key(request.args)
            let ttl = try CacheArguments.ttl(request.args) ?? nil
            var delta: Int64 = 1
            if let v = request.args["by"], v != .null {
                guard case .int(let by) = v else { throw CacheArguments.Invalid(message: "\"by\" must be an integer (64-bit, may be negative)") }
                delta = by
            }
            store.incr(key, by: delta, ttlMs: ttl, now: WallClock.nowMs()) { result in
                request.answer(result) { outcome in
                    switch outcome {
                    case .value(let n): request.succeed(["value": .int(n)])
                    case .notAnInteger:
                        request.fail(.failedPrecondition, "the value of \"\(key.key.truncatedForMessages)\" is not a decimal 64-bit integer")
                    case .overflow:
                        request.fail(.failedPrecondition, "incrementing \"\(key.key.truncatedForMessages)\" by \(delta) would overflow a 64-bit integer")
                    }
                }
            }
        }
    }
}
