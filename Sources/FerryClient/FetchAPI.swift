import FerryProtocol

/// One header field; lists of them keep order and duplicates.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// An HTTP request for ferryd to make (PROTOCOL.md, `fetch`).
///
/// ```swift
/// var req = FetchRequest("https://api.example.com/quotes", method: "POST")
/// req.headers = [HTTPHeader("Authorization", "Bearer \(token)"), HTTPHeader("X-Api-Version", "2")]
/// req.body = Array(#"{"query":"wisdom"}"#.utf8)
/// let res = try await client.fetch(req)
/// ```
public struct FetchRequest: Sendable, Equatable {
    /// The protocol's redirect modes (one enum, in FerryProtocol).
    public typealias Redirect = RedirectMode
    /// The WHATWG fetch cache modes (one enum, in FerryProtocol).
    public typealias CacheMode = FerryProtocol.CacheMode

    public var url: String
    public var method: String
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// For each exchange with the origin (`timeout_ms`).
    public var timeout: Duration?
    public var redirect: Redirect?
    public var maxRedirects: Int?
    public var maxBytes: Int?
    public var cache: CacheMode?
    /// An unsafe method (POST, PUT, PATCH, DELETE) may be sent again by the daemon when a reused connection died
    /// before the answer: say so only for a request that is idempotent (`retry`).
    public var retry: Bool?
    /// Leave a large complete body in `FetchResponse.file` (a descriptor, when the daemon offers them) instead of
    /// reading it into `body`.
    public var bodyAsFile = false
    /// Trust no certificate (curl's `-k`), or only these CA certificates in PEM (curl's `--cacert`, the file's
    /// text). Either makes the request bypass the shared cache (`no-store`).
    public var insecure = false
    public var caPEM: String?

    public init(_ url: String, method: String = "GET", headers: [HTTPHeader] = [], body: [UInt8] = [],
                timeout: Duration? = nil, cache: CacheMode? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.cache = cache
    }

    /// The `fetch` arguments.
    public var arguments: JSONObject {
        var args: JSONObject = ["url": .string(url)]
        if method != "GET" { args["method"] = .string(method) }
        if !headers.isEmpty { args["headers"] = .array(headers.map { .array([.string($0.name), .string($0.value)]) }) }
        if let timeout { args["timeout_ms"] = .int(FerryClient.milliseconds(timeout)) }
        if let redirect { args["redirect"] = .string(redirect.rawValue) }
        if let maxRedirects { args["max_redirects"] = .int(Int64(maxRedirects)) }
        if let maxBytes { args["max_bytes"] = .int(Int64(maxBytes)) }
        if let cache { args["cache"] = .string(cache.rawValue) }
        if let retry { args["retry"] = .bool(retry) }
        if insecure { args["insecure"] = .bool(true) }
        if let caPEM { args["ca_pem"] = .string(caPEM) }
        return args
    }
}

/// What came back: any HTTP status (4xx and 5xx included) is a response, not an error.
public struct FetchResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [HTTPHeader]
    /// The URL of this response, after `redirects` redirects.
    public var url: String
    public var redirects: Int
    /// How the shared HTTP cache answered; nil for a word this version does not know.
    public var cacheStatus: CacheStatus?
    public var age: Int
    /// total_ms, and for a network exchange dns_ms, connect_ms, tls_ms, first_byte_ms, transfer_ms.
    public var timing: [String: Double]
    /// The body; empty when it came as `file`.
    public var body: [UInt8]
    /// The body as a descriptor (`FetchRequest.bodyAsFile`, a large complete body, a daemon that offers it).
    public var file: BodyFile?

    /// The first value of a header (names compare case-insensitively).
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    public var isSuccess: Bool { (200..<300).contains(status) }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    init(result: JSONObject, body: [UInt8], file: BodyFile? = nil) {
        self.file = file
        status = Int(result["status"]?.intValue ?? 0)
        headers = (result["headers"]?.arrayValue ?? []).compactMap { pair in
            guard let a = pair.arrayValue, a.count == 2, let n = a[0].stringValue, let v = a[1].stringValue else { return nil }
            return HTTPHeader(n, v)
        }
        url = result["url"]?.stringValue ?? ""
        redirects = Int(result["redirects"]?.intValue ?? 0)
        cacheStatus = result["cache"]?["status"]?.stringValue.flatMap(CacheStatus.init(rawValue:))
        age = Int(result["cache"]?["age_s"]?.intValue ?? 0)
        var t: [String: Double] = [:]
        for (k, v) in result["timing"]?.objectValue ?? JSONObject() { if let d = v.doubleValue { t[k] = d } }
        timing = t
        self.body = body
    }
}

extension FerryClient {
    /// Makes the request through ferryd and its shared HTTP cache.
    public func fetch(_ request: FetchRequest, deadline: Duration? = nil) async throws -> FetchResponse {
        var args = request.arguments
        if offersBodyFiles { args["body_fd"] = true }
        let reply = try await call(.fetch, args, body: request.body, timeout: deadline)
        let file = request.bodyAsFile ? reply.file : nil
        return FetchResponse(result: reply.result, body: file == nil ? try reply.wholeBody() : [], file: file)
    }

    /// The same request, as a stream: the response's `head` as soon as it is known (when the body streams),
    /// `progress` while the daemon downloads, the body in `chunk`s as it arrives, then the `response`. Consuming it
    /// slowly slows the download's delivery, not the client's memory (`ReadCredit`); dropping it or cancelling the
    /// consuming task cancels the request (and the download, if no other client follows it).
    ///
    /// ```swift
    /// for try await event in client.fetchStream(FetchRequest(url)) {
    ///     if case .chunk(let bytes) = event { try file.write(bytes) }
    /// }
    /// ```
    public func fetchStream(_ request: FetchRequest, deadline: Duration? = nil) -> FetchEventStream {
        var args = request.arguments
        args["progress"] = true
        if request.bodyAsFile && offersBodyFiles { args["body_fd"] = true }
        return FetchEventStream(upstream: stream(.fetch, args, body: request.body, timeout: deadline))
    }

    /// Fetches an endpoint of an API described as values (see `Endpoint`).
    public func fetch(_ endpoint: some Endpoint, deadline: Duration? = nil) async throws -> FetchResponse {
        try await fetch(try endpoint.makeRequest(), deadline: deadline)
    }
}
