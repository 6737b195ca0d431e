import FerryProtocol

/// One URL the shared HTTP cache holds (`http.list`, `http.show`). Partitions — responses stored for a credential
/// (`Authorization`, `Cookie`) or marked private — are counted, never shown.
public struct CachedHTTPURL: Sendable, Equatable {
    /// As stored: normalised (scheme and host in lower case, default port and fragment dropped).
    public var url: String
    /// Bytes stored for it: records and bodies, every variant and partition.
    public var bytes: Int
    public var partitions: Int
    /// The responses' `Vary`, when they have one (then `variants` says how many are stored).
    public var vary: String?
    public var variants: Int?
    /// The shared response's status, body size, age and freshness (absent with `Vary`, or with partitions only).
    public var status: Int?
    public var size: Int?
    public var ageSeconds: Int64?
    public var fresh: Bool?

    init(_ o: JSONValue) {
        url = o["url"]?.stringValue ?? ""
        bytes = Int(o["bytes"]?.intValue ?? 0)
        partitions = Int(o["partitions"]?.intValue ?? 0)
        vary = o["vary"]?.stringValue
        variants = o["variants"]?.intValue.map { Int($0) }
        status = o["status"]?.intValue.map { Int($0) }
        size = o["size"]?.intValue.map { Int($0) }
        ageSeconds = o["age_s"]?.intValue
        fresh = o["fresh"]?.boolValue
    }
}

/// A stored response as `http.show` reports it.
public struct CachedHTTPResponse: Sendable, Equatable {
    public var status: Int
    /// Its header fields as a client is served them, in order.
    public var headers: [(name: String, value: String)]
    /// When it was received, ms since the Unix epoch.
    public var storedAt: Int64
    public var ageSeconds: Int64
    public var lifetimeSeconds: Int64
    public var fresh: Bool
    public var size: Int
    /// For a variant: the request header values its `Vary` names.
    public var variant: String?

    init(_ o: JSONValue) {
        status = Int(o["status"]?.intValue ?? 0)
        headers = (o["headers"]?.arrayValue ?? []).compactMap { pair in
            guard let a = pair.arrayValue, a.count == 2, let name = a[0].stringValue, let value = a[1].stringValue else { return nil }
            return (name, value)
        }
        storedAt = o["stored_at"]?.intValue ?? 0
        ageSeconds = o["age_s"]?.intValue ?? 0
        lifetimeSeconds = o["lifetime_s"]?.intValue ?? 0
        fresh = o["fresh"]?.boolValue ?? false
        size = Int(o["size"]?.intValue ?? 0)
        variant = o["variant"]?.stringValue
    }

    public static func == (a: CachedHTTPResponse, b: CachedHTTPResponse) -> Bool {
        a.status == b.status && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
            && a.storedAt == b.storedAt && a.ageSeconds == b.ageSeconds && a.lifetimeSeconds == b.lifetimeSeconds
            && a.fresh == b.fresh && a.size == b.size && a.variant == b.variant
    }
}

/// The `http.*` operations: the shared HTTP cache, seen and managed as Varnish's and nginx's users do theirs.
///
/// ```swift
/// for u in try await client.httpCacheList(prefix: "https://api.test/") { print(u.url, u.status ?? 0) }
/// if let (url, responses) = try await client.httpCacheShow("https://api.test/q") { … }
/// try await client.httpPurge("https://api.test/q")           // true when something was stored
/// try await client.httpPurge(prefix: "https://api.test/")    // URLs removed
/// ```
extension FerryClient {
    /// Every URL whose stored (normalised) form starts with `prefix`, in byte order, fetched page by page.
    public func httpCacheList(prefix: String = "", pageSize: Int = 1000) async throws -> [CachedHTTPURL] {
        var out: [CachedHTTPURL] = []
        var cursor: String?
        repeat {
            var args: JSONObject = ["prefix": .string(prefix), "limit": .int(Int64(pageSize))]
            if let cursor { args["cursor"] = .string(cursor) }
            let page = try await call(.httpList, args).result
            out += (page["urls"]?.arrayValue ?? []).map(CachedHTTPURL.init)
            cursor = page["cursor"]?.stringValue
        } while cursor != nil
        return out
    }

    /// What is stored for `url`; nil when nothing is.
    public func httpCacheShow(_ url: String) async throws -> (url: CachedHTTPURL, responses: [CachedHTTPResponse])? {
        do {
            let result = try await call(.httpShow, ["url": .string(url)]).result
            return (CachedHTTPURL(.object(result)), (result["responses"]?.arrayValue ?? []).map(CachedHTTPResponse.init))
        } catch let e as FerryError where e.code == .notFound {
            return nil
        }
    }

    /// Removes every stored response of `url` (variants and partitions too) and the image loader's copies;
    /// returns whether anything was stored.
    @discardableResult
    public func httpPurge(_ url: String) async throws -> Bool {
        (try await call(.httpPurge, ["url": .string(url)]).result["purged"]?.intValue ?? 0) > 0
    }

    /// The same for every URL starting with `prefix` (not empty); returns how many URLs were removed.
    @discardableResult
    public func httpPurge(prefix: String) async throws -> Int {
        Int(try await call(.httpPurge, ["prefix": .string(prefix)]).result["purged"]?.intValue ?? 0)
    }
}
