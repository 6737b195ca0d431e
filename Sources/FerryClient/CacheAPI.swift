import FerryProtocol

/// A value read from the shared cache.
public struct CachedValue: Sendable, Equatable {
    /// The value; empty when it came as `file`.
    public var bytes: [UInt8]
    /// The value as a descriptor, when asked for (`bodyAsFile`) and the daemon handed one over (large values).
    public var file: BodyFile?
    /// The value's size, whichever way it came.
    public var size: Int
    /// Milliseconds since the Unix epoch.
    public var createdAt: Int64
    public var expiresAt: Int64?
    /// Where ferryd found it: "memory", "disk", or "fleet" (a namespace shared through Redis, `--l2-namespaces`).
    public var source: String?

    /// The value `cache.get`'s reply holds; with `bodyAsFile`, a descriptor the reply brings stays in `file`,
    /// otherwise it is read into `bytes` (and closed).
    public init(reply: FerryReply, bodyAsFile: Bool) throws(FerryError) {
        file = bodyAsFile ? reply.file : nil
        bytes = file == nil ? try reply.wholeBody() : []
        size = Int(reply.result["size"]?.intValue ?? Int64(bytes.count))
        createdAt = reply.result["created_at"]?.intValue ?? 0
        expiresAt = reply.result["expires_at"]?.intValue
        source = reply.result["source"]?.stringValue
    }
}

/// One key of a `cacheKeys` listing.
public struct CachedKey: Sendable, Equatable {
    public var key: String
    public var size: Int
    public var expiresAt: Int64?
}

/// The `cache.*` operations: a key-value cache shared by every program of this user, bounded in memory and on
/// disk, surviving restarts.
///
/// ```swift
/// try await client.cacheSet("token", Array(token.utf8), ttl: .seconds(3600))
/// if let v = try await client.cacheGet("token") { print(String(decoding: v.bytes, as: UTF8.self)) }
/// try await client.cacheDelete("token")
/// ```
extension FerryClient {
    /// Stores `value`; returns false when `ifAbsent` and a live entry exists.
    @discardableResult
    public func cacheSet(_ key: String, _ value: [UInt8], namespace: String? = nil, ttl: Duration? = nil,
                         ifAbsent: Bool = false) async throws -> Bool {
        CacheCalls.stored(try await call(.cacheSet, CacheCalls.set(key, namespace, ttl: ttl, ifAbsent: ifAbsent), body: value).result)
    }

    /// The value, or nil when the key is absent or expired. A large value comes through a descriptor when the
    /// daemon offers it (`offersBodyFiles`): read into `bytes`, or, with `bodyAsFile`, left in `file` for the caller
    /// to read or copy (`BodyFile.copy(toPath:)`) without the bytes passing through this process.
    public func cacheGet(_ key: String, namespace: String? = nil, bodyAsFile: Bool = false) async throws -> CachedValue? {
        do {
            return try CachedValue(reply: try await call(.cacheGet, CacheCalls.get(key, namespace, bodyFD: offersBodyFiles)), bodyAsFile: bodyAsFile)
        } catch let e as FerryError where e.code == .notFound {
            return nil
        }
    }

    /// Removes the key; returns whether it existed.
    @discardableResult
    public func cacheDelete(_ key: String, namespace: String? = nil) async throws -> Bool {
        CacheCalls.deleted(try await call(.cacheDelete, CacheCalls.key(key, namespace)).result)
    }

    /// Sets a new TTL (`nil`: never expire); returns false when there is no live entry.
    @discardableResult
    public func cacheTouch(_ key: String, ttl: Duration?, namespace: String? = nil) async throws -> Bool {
        do {
            _ = try await call(.cacheTouch, CacheCalls.touch(key, namespace, ttl: ttl))
            return true
        } catch let e as FerryError where e.code == .notFound {
            return false
        }
    }

    /// Adds `by` to the integer stored at `key`, atomically in the daemon, and returns the new value; a missing key
    /// counts from 0 (and takes `ttl`), an existing one keeps its expiry. A value that is not a decimal integer, or a
    /// sum past 64 bits, throws `failed_precondition` and leaves the value as it was.
    ///
    /// ```swift
    /// let hits = try await client.cacheIncr("hits")          // 1, then 2, …
    /// try await client.cacheIncr("quota", by: -5)
    /// ```
    @discardableResult
    public func cacheIncr(_ key: String, by delta: Int64 = 1, ttl: Duration? = nil, namespace: String? = nil) async throws -> Int64 {
        try CacheCalls.value(try await call(.cacheIncr, CacheCalls.incr(key, namespace, by: delta, ttl: ttl)).result)
    }

    /// Every live key of a namespace (with `prefix`), in byte order, fetched page by page.
    public func cacheKeys(namespace: String? = nil, prefix: String = "", pageSize: Int = 1000) async throws -> [CachedKey] {
        var out: [CachedKey] = []
        var cursor: String? = nil
        repeat {
            var args: JSONObject = ["prefix": .string(prefix), "limit": .int(Int64(pageSize))]
            if let namespace { args["namespace"] = .string(namespace) }
            if let cursor { args["cursor"] = .string(cursor) }
            let page = try await call(.cacheList, args).result
            for k in page["keys"]?.arrayValue ?? [] {
                out.append(CachedKey(key: k["key"]?.stringValue ?? "", size: Int(k["size"]?.intValue ?? 0), expiresAt: k["expires_at"]?.intValue))
            }
            cursor = page["cursor"]?.stringValue
        } while cursor != nil
        return out
    }

    /// Removes every entry of a namespace; returns how many.
    @discardableResult
    public func cacheClear(namespace: String? = nil) async throws -> Int {
        var args = JSONObject()
        if let namespace { args["namespace"] = .string(namespace) }
        return Int(try await call(.cacheClear, args).result["removed"]?.intValue ?? 0)
    }

}

/// The `cache.*` operations' arguments and the reading of their results, as both clients make them
/// (`FerryClient`'s cache API and `BlockingConnection`'s), so the two cannot drift apart.
enum CacheCalls {
    static func key(_ key: String, _ namespace: String?) -> JSONObject {
        var args: JSONObject = ["key": .string(key)]
        if let namespace { args["namespace"] = .string(namespace) }
        return args
    }

    static func set(_ key: String, _ namespace: String?, ttl: Duration?, ifAbsent: Bool) -> JSONObject {
        var args = CacheCalls.key(key, namespace)
        if let ttl { args["ttl_ms"] = .int(FerryClient.milliseconds(ttl)) }
        if ifAbsent { args["if_absent"] = true }
        return args
    }

    /// `bodyFD`: a large value may come as a descriptor (the daemon offers it and the client takes it).
    static func get(_ key: String, _ namespace: String?, bodyFD: Bool) -> JSONObject {
        var args = CacheCalls.key(key, namespace)
        if bodyFD { args["body_fd"] = true }
        return args
    }

    /// `ttl` nil: never expire.
    static func touch(_ key: String, _ namespace: String?, ttl: Duration?) -> JSONObject {
        var args = CacheCalls.key(key, namespace)
        args["ttl_ms"] = ttl.map { .int(FerryClient.milliseconds($0)) } ?? .null
        return args
    }

    static func incr(_ key: String, _ namespace: String?, by delta: Int64, ttl: Duration?) -> JSONObject {
        var args = CacheCalls.key(key, namespace)
        args["by"] = .int(delta)
        if let ttl { args["ttl_ms"] = .int(FerryClient.milliseconds(ttl)) }
        return args
    }

    static func stored(_ result: JSONObject) -> Bool { result["stored"]?.boolValue ?? false }

    static func deleted(_ result: JSONObject) -> Bool { result["deleted"]?.boolValue ?? false }

    /// `cache.incr`'s new value.
    static func value(_ result: JSONObject) throws(FerryError) -> Int64 {
        guard let value = result["value"]?.intValue else { throw FerryError(.internal, "cache.incr answered without a value") }
        return value
    }
}
