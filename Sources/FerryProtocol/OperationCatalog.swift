/// One field of an operation's arguments or result, as `describe` reports it.
public struct FieldDescriptor: Sendable {
    public var name: String
    public var type: String
    public var required: Bool
    public var doc: String

    public init(_ name: String, _ type: String, required: Bool = false, _ doc: String) {
        self.name = name
        self.type = type
        self.required = required
        self.doc = doc
    }
}

/// What an operation takes and gives: enough for a client to discover the API through `describe`.
public struct OperationDescriptor: Sendable {
    public var op: OperationName
    public var summary: String
    public var args: [FieldDescriptor]
    public var result: [FieldDescriptor]
    public var events: [EventName]
    /// How the request body is used.
    public var body: BodyKind

    /// The wire name (`op.rawValue`).
    public var name: String { op.rawValue }

    public var json: JSONValue {
        .object([
            "name": .string(name),
            "summary": .string(summary),
            "args": .array(args.map { .object(["name": .string($0.name), "type": .string($0.type), "required": .bool($0.required), "doc": .string($0.doc)]) }),
            "result": .array(result.map { .object(["name": .string($0.name), "type": .string($0.type), "doc": .string($0.doc)]) }),
            "events": .array(events.map { .string($0.rawValue) }),
            "body": .string(body.rawValue),
        ])
    }
}

/// The operations of protocol v1, in the order `hello` and `describe` list them.
///
/// ```swift
/// OperationCatalog.v1.map(\.name)              // ["hello", "ping", "describe", "stats", "cancel", "cache.set", …]
/// OperationCatalog.descriptor(.cacheGet).body   // .none
/// ```
public enum OperationCatalog {
    public static let v1: [OperationDescriptor] = OperationName.allCases.map { descriptor($0) }

    /// The descriptor of an operation of this version (exhaustive: every name has one).
    public static func descriptor(_ op: OperationName) -> OperationDescriptor {
        switch op {
        case .hello: return hello
        case .ping: return ping
        case .describe: return describe
        case .stats: return stats
        case .cancel: return cancel
        case .cacheSet: return cacheSet
        case .cacheGet: return cacheGet
        case .cacheDelete: return cacheDelete
        case .cacheTouch: return cacheTouch
        case .cacheIncr: return cacheIncr
        case .cacheList: return cacheList
        case .cacheClear: return cacheClear
        case .fetch: return fetch
        case .httpList: return httpList
        case .httpShow: return httpShow
        case .httpPurge: return httpPurge
        case .imageGet: return imageGet
        case .imagePrefetch: return imagePrefetch
        case .imageEvict: return imageEvict
        }
    }

    /// The descriptor for a name from the wire, if this version has that operation.
    public static func descriptor(named name: String) -> OperationDescriptor? { OperationName(rawValue: name).map { descriptor($0) } }

    static let keyArgs = [
        FieldDescriptor("key", "string", required: true, "1 to 1024 bytes of UTF-8"),
        FieldDescriptor("namespace", "string", "default \"default\"; 1 to 128 bytes of A-Z a-z 0-9 . _ -"),
    ]

    public static let hello = OperationDescriptor(
        op: .hello, summary: "Handshake: negotiate the protocol version; must be the first request.",
        args: [FieldDescriptor("versions", "array<integer>", required: true, "protocol versions the client speaks"),
               FieldDescriptor("client", "string", "a name for the server's logs")],
        result: [FieldDescriptor("version", "integer", "the version chosen"),
                 FieldDescriptor("protocol", "string", "the revision of the document the daemon follows (\"1.1\")"),
                 FieldDescriptor("server", "string", "server name and version"),
                 FieldDescriptor("limits", "object", "handshake_frame_bytes, max_frame_bytes, max_json_bytes, max_nesting, max_in_flight"),
                 FieldDescriptor("operations", "array<string>", "the operations this server implements"),
                 FieldDescriptor("capabilities", "array<string>", "what it offers beyond the version's core (body_fd)")],
        events: [], body: .none)

    public static let ping = OperationDescriptor(
        op: .ping, summary: "Round trip; echoes the request body; can wait and send tick events.",
        args: [FieldDescriptor("delay_ms", "integer", "answer after this many milliseconds (0-60000)"),
               FieldDescriptor("events", "integer", "tick events to send before the reply (0-1000)")],
        result: [FieldDescriptor("pong", "boolean", "always true")],
        events: [.tick], body: .echo)

    public static let describe = OperationDescriptor(
        op: .describe, summary: "Every operation with its arguments and result fields.",
        args: [],
        result: [FieldDescriptor("protocol", "integer", "the protocol version"),
                 FieldDescriptor("operations", "array<object>", "name, summary, args, result, events, body")],
        events: [], body: .none)

    public static let stats = OperationDescriptor(
        op: .stats, summary: "Counters: uptime, connections, requests and errors per operation and code, bytes.",
        args: [FieldDescriptor("format", "string", "json (the default) or prometheus: then the body is Prometheus' text exposition and the result {\"format\": \"prometheus\"}")],
        result: [FieldDescriptor("pid", "integer", "the daemon's process id"),
                 FieldDescriptor("version", "string", "the daemon's version"),
                 FieldDescriptor("uptime_ms", "integer", "time since start"),
                 FieldDescriptor("connections", "object", "open, total, rejected"),
                 FieldDescriptor("requests", "object", "total, in_flight, errors"),
                 FieldDescriptor("bytes", "object", "in, out"),
                 FieldDescriptor("ops", "object", "per operation: requests, errors"),
                 FieldDescriptor("errors", "object", "per error code: count")],
        events: [], body: .none)

    public static let cancel = OperationDescriptor(
        op: .cancel, summary: "Cancel a request of this connection that is still in flight.",
        args: [FieldDescriptor("id", "integer", required: true, "the id of the request to cancel")],
        result: [FieldDescriptor("cancelled", "boolean", "whether a request was in flight and is now cancelled")],
        events: [], body: .none)

    public static let cacheSet = OperationDescriptor(
        op: .cacheSet, summary: "Store the request body under a key, optionally with a TTL.",
        args: keyArgs + [FieldDescriptor("ttl_ms", "integer", "expire after this many milliseconds"),
                         FieldDescriptor("if_absent", "boolean", "store only when no live entry exists")],
        result: [FieldDescriptor("stored", "boolean", "false when if_absent and an entry exists")],
        events: [], body: .value)

    /// The argument that asks for a large body as a descriptor, and the result field that then names it.
    static let bodyFDArg = FieldDescriptor("body_fd", "boolean",
                                           "with the body_fd capability: a body of limits.body_fd_min_bytes or more comes as a descriptor (SCM_RIGHTS)")
    static let bodyFDResult = FieldDescriptor("body_fd", "object", "{offset, length}: the body is in the descriptor that came with this frame")

    public static let cacheGet = OperationDescriptor(
        op: .cacheGet, summary: "The value of a key as the reply body.",
        args: keyArgs + [bodyFDArg],
        result: [FieldDescriptor("size", "integer", "value bytes"),
                 FieldDescriptor("created_at", "integer", "ms since the Unix epoch"),
                 FieldDescriptor("expires_at", "integer", "ms since the Unix epoch, when it expires"),
                 FieldDescriptor("source", "string", "memory or disk"),
                 bodyFDResult],
        events: [.chunk], body: .none)

    public static let cacheDelete = OperationDescriptor(
        op: .cacheDelete, summary: "Remove a key.",
        args: keyArgs, result: [FieldDescriptor("deleted", "boolean", "whether the key existed")],
        events: [], body: .none)

    public static let cacheTouch = OperationDescriptor(
        op: .cacheTouch, summary: "Set a new TTL on a live entry (null: never expire).",
        args: keyArgs + [FieldDescriptor("ttl_ms", "integer|null", required: true, "the new TTL")],
        result: [FieldDescriptor("expires_at", "integer", "the new expiry, absent when none")],
        events: [], body: .none)

    public static let cacheIncr = OperationDescriptor(
        op: .cacheIncr, summary: "Add to the decimal integer stored at a key, atomically (a missing key counts from 0).",
        args: keyArgs + [FieldDescriptor("by", "integer", "what to add, default 1; may be negative"),
                         FieldDescriptor("ttl_ms", "integer", "the TTL of a key this creates; an existing key keeps its expiry")],
        result: [FieldDescriptor("value", "integer", "the value after the increment")],
        events: [], body: .none)

    public static let cacheList = OperationDescriptor(
        op: .cacheList, summary: "Live keys of a namespace in byte order, one page at a time.",
        args: [FieldDescriptor("namespace", "string", "default \"default\""),
               FieldDescriptor("prefix", "string", "only keys starting with this"),
               FieldDescriptor("limit", "integer", "1 to 1000, default 100"),
               FieldDescriptor("cursor", "string", "from the previous page")],
        result: [FieldDescriptor("keys", "array<object>", "key, size, expires_at"),
                 FieldDescriptor("cursor", "string", "present when more keys follow")],
        events: [], body: .none)

    public static let cacheClear = OperationDescriptor(
        op: .cacheClear, summary: "Remove every entry of a namespace.",
        args: [FieldDescriptor("namespace", "string", "default \"default\"")],
        result: [FieldDescriptor("removed", "integer", "live entries removed")],
        events: [], body: .none)

    public static let fetch = OperationDescriptor(
        op: .fetch, summary: "An HTTP request made by the daemon, through its shared HTTP cache; the request body is the HTTP body.",
        args: [FieldDescriptor("url", "string", required: true, "absolute http or https URL, at most 8192 bytes"),
               FieldDescriptor("method", "string", "default GET"),
               FieldDescriptor("headers", "array<[string, string]>", "request header fields, in order"),
               FieldDescriptor("timeout_ms", "integer", "for each exchange with the origin (the envelope's timeout_ms bounds the whole request)"),
               FieldDescriptor("redirect", "string", "follow (default), manual or error"),
               FieldDescriptor("max_redirects", "integer", "0 to 50, default 10"),
               FieldDescriptor("max_bytes", "integer", "largest response body accepted, default the daemon's --max-fetch-bytes (8 GiB)"),
               FieldDescriptor("cache", "string", "default, no-store, reload, no-cache, force-cache or only-if-cached"),
               FieldDescriptor("progress", "boolean", "send progress events"),
               FieldDescriptor("retry", "boolean", "an unsafe method may be sent again when a reused connection died before the answer (default false)"),
               bodyFDArg],
        result: [FieldDescriptor("status", "integer", "the HTTP status"),
                 FieldDescriptor("headers", "array<[string, string]>", "response header fields, duplicates and order kept"),
                 FieldDescriptor("url", "string", "the URL of the response, after redirects"),
                 FieldDescriptor("redirects", "integer", "redirects followed"),
                 FieldDescriptor("cache", "object", "status (hit, miss, revalidated, stale, bypass, coalesced) and age_s"),
                 FieldDescriptor("timing", "object", "total_ms, and for a network exchange dns_ms, connect_ms, tls_ms, first_byte_ms"),
                 bodyFDResult],
        events: [.head, .chunk, .progress], body: .http)

    public static let httpList = OperationDescriptor(
        op: .httpList, summary: "The URLs the shared HTTP cache holds, in byte order, one page at a time.",
        args: [FieldDescriptor("prefix", "string", "only URLs starting with this (as stored: normalised)"),
               FieldDescriptor("limit", "integer", "1 to 1000, default 100"),
               FieldDescriptor("cursor", "string", "from the previous page: the URLs after this one")],
        result: [FieldDescriptor("urls", "array<object>", "url, bytes, partitions, and status, size, age_s, fresh (or vary and variants)"),
                 FieldDescriptor("cursor", "string", "present when more URLs follow")],
        events: [], body: .none)

    public static let httpShow = OperationDescriptor(
        op: .httpShow, summary: "What the shared HTTP cache holds for one URL: responses, headers, age, freshness; partitions by count.",
        args: [FieldDescriptor("url", "string", required: true, "absolute http or https URL")],
        result: [FieldDescriptor("url", "string", "as stored (normalised)"),
                 FieldDescriptor("bytes", "integer", "records and bodies stored for it"),
                 FieldDescriptor("partitions", "integer", "credential partitions holding a response (contents never shown)"),
                 FieldDescriptor("vary", "string", "the responses' Vary, when they have one"),
                 FieldDescriptor("responses", "array<object>", "status, headers, stored_at, age_s, lifetime_s, fresh, size, variant")],
        events: [], body: .none)

    public static let httpPurge = OperationDescriptor(
        op: .httpPurge, summary: "Remove what the shared HTTP cache (and the image loader's memory) holds for a URL or a URL prefix.",
        args: [FieldDescriptor("url", "string", "one URL: every variant and partition of it"),
               FieldDescriptor("prefix", "string", "every URL starting with this (as stored: normalised); not empty")],
        result: [FieldDescriptor("purged", "integer", "URLs removed")],
        events: [], body: .none)

    /// The arguments that ask for a variant, shared by `image.get` and `image.prefetch`.
    static let variantArgs: [FieldDescriptor] = [
        FieldDescriptor("width", "integer", "a variant: the box's width in points, 1 to 8192"),
        FieldDescriptor("height", "integer", "a variant: the box's height in points, 1 to 8192"),
        FieldDescriptor("fit", "string", "a variant: inside (default), cover, contain, fill or outside"),
        FieldDescriptor("format", "string", "a variant: original (default), jpeg, png, webp or avif"),
        FieldDescriptor("quality", "integer", "a variant: 1 to 100"),
        FieldDescriptor("density", "integer", "a variant: pixels per point, 1 to 4 (default 1)"),
    ]

    public static let imageGet = OperationDescriptor(
        op: .imageGet, summary: "An image through the shared image loader (memory, disk, network); the bytes are the reply body.",
        args: [FieldDescriptor("url", "string", required: true, "absolute http or https URL"),
               FieldDescriptor("headers", "array<[string, string]>", "request header fields"),
               FieldDescriptor("cache", "string", "the fetch cache mode (default: default)"),
               FieldDescriptor("timeout_ms", "integer", "for each exchange with the origin")] + variantArgs,
        result: [FieldDescriptor("format", "string", "jpeg, png, gif, webp, avif, heic, tiff, svg, pdf, jxl, bmp, … (from decoding the bytes)"),
                 FieldDescriptor("width", "integer", "pixels, as displayed (EXIF orientation applied)"),
                 FieldDescriptor("height", "integer", "pixels, as displayed"),
                 FieldDescriptor("orientation", "integer", "EXIF orientation 1…8 of the bytes (1: none)"),
                 FieldDescriptor("pages", "integer", "frames of an animation, pages of a document; 1 otherwise"),
                 FieldDescriptor("size", "integer", "bytes"),
                 FieldDescriptor("source", "string", "memory, disk, network, or made (a variant made now)"),
                 FieldDescriptor("url", "string", "the URL of the bytes, after redirects")],
        events: [.chunk], body: .none)

    public static let imagePrefetch = OperationDescriptor(
        op: .imagePrefetch, summary: "Queue downloads (with variant arguments: that variant of every URL) that warm the caches, behind direct requests; answers at once.",
        args: [FieldDescriptor("urls", "array<string>", required: true, "1 to 1000 URLs")] + variantArgs,
        result: [FieldDescriptor("queued", "integer", "downloads (or variants) queued; those already in memory or in flight are skipped")],
        events: [], body: .none)

    public static let imageEvict = OperationDescriptor(
        op: .imageEvict, summary: "Drop a URL's images from the loader's memory tier.",
        args: [FieldDescriptor("url", "string", required: true, "the image's URL")],
        result: [FieldDescriptor("evicted", "boolean", "whether the memory tier held it")],
        events: [], body: .none)
}

/// The operations of protocol v1, in the order `hello` and `describe` list them; the raw value is the wire name.
public enum OperationName: String, Sendable, CaseIterable {
    case hello
    case ping
    case describe
    case stats
    case cancel
    case cacheSet = "cache.set"
    case cacheGet = "cache.get"
    case cacheDelete = "cache.delete"
    case cacheTouch = "cache.touch"
    case cacheIncr = "cache.incr"
    case cacheList = "cache.list"
    case cacheClear = "cache.clear"
    case fetch
    case httpList = "http.list"
    case httpShow = "http.show"
    case httpPurge = "http.purge"
    case imageGet = "image.get"
    case imagePrefetch = "image.prefetch"
    case imageEvict = "image.evict"
}
