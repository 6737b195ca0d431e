import FerryCache
import FerryProtocol
import FerryStore

/// `cache.get`: a memory hit is answered on the loop thread at once; a miss goes to the disk worker.
final class CacheGetOperation: OperationHandler {
    let descriptor = OperationCatalog.descriptor(named: "cache.get")!

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let key = try CacheArguments.key(request.args)
            guard let server = request.server else { return }
            server.store.get(key, now: WallClock.nowMs()) { result in
                switch result {
                case .success(let found?):
                    var reply: JSONObject = ["size": .int(Int64(found.0.value.count)), "created_at": .int(found.0.createdAt)]
                    if let e = found.0.expiresAt { reply["expires_at"] = .int(e) }
                    reply["source"] = .string(found.1.rawValue)
                    request.succeed(reply, body: found.0.value)
                case .success(nil):
                    request.fail(.notFound, "no entry \"\(key.key.truncatedForMessages)\" in namespace \"\(key.namespace)\"")
                case .failure(let e):
                    request.fail(store: e)
                }
            }
        }
    }
}

/// `cache.list`: one page of live keys in byte order.
final class CacheListOperation: OperationHandler {
    let descriptor = OperationCatalog.descriptor(named: "cache.list")!

    func start(_ request: RequestContext) {
        request.withArguments { () throws(CacheArguments.Invalid) in
            let namespace = try CacheArguments.namespace(request.args)
            let prefix = try CacheArguments.string(request.args, "prefix") ?? ""
            let cursor = try CacheArguments.string(request.args, "cursor")
            let limit = try CacheArguments.limit(request.args)
            guard let server = request.server else { return }
            server.store.list(namespace: namespace, prefix: prefix, cursor: cursor, limit: limit, now: WallClock.nowMs()) { result in
                switch result {
                case .success(let page):
                    var reply: JSONObject = ["keys": .array(page.keys.map { k in
                        var o: JSONObject = ["key": .string(k.key), "size": .int(Int64(k.size))]
                        if let e = k.expiresAt { o["expires_at"] = .int(e) }
                        return .object(o)
                    })]
                    if page.more, let last = page.keys.last { reply["cursor"] = .string(last.key) }
                    request.succeed(reply)
                case .failure(let e):
                    request.fail(store: e)
                }
            }
        }
    }
}
