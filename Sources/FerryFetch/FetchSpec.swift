import FerryHTTPCache
import FerryProtocol

/// One fetch, checked: everything libcurl will be given has been validated before a spec is made (the `fetch`
/// operation's arguments, an image request), so a bad request never reaches the network.
///
/// ```swift
/// var spec = FetchSpec(url: "https://api.example.com/quotes")
/// spec.headers = [("Authorization", "Bearer t")]
/// FetchSpec.urlProblem("ftp://x")   // "only http and https URLs can be fetched (got \"ftp\")"
/// ```
public struct FetchSpec: Sendable {
    public var url: String
    public var method: String
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// For each exchange with the origin.
    public var timeoutMs: Int?
    public var redirect: RedirectMode
    public var maxRedirects: Int
    public var maxBytes: Int
    public var cacheMode: CacheMode
    /// Whether the job reports progress (`FetchJob.onProgress`).
    public var progress: Bool
    /// Who asks, for fair shares of transfer slots (`SlotScheduler`): the client connection's id; 0 for the daemon.
    public var owner: UInt64 = 0
    /// The uid of the process that asks (its credentials' partition is its own, `FetchEngine.partition`).
    public var uid: UInt32 = 0
    /// `retry`: an unsafe method may be sent again by the transport when a reused connection died under it (the
    /// client knows it is idempotent). An `Idempotency-Key` header says the same.
    public var retry = false
    /// Whose certificates it trusts (`TLSTrust`); anything but `.system` runs as `no-store`.
    public var tls = TLSTrust.system

    /// Whether the transport may replay this request on its own (`OriginRequest.mayReplay`).
    public var mayReplay: Bool {
        retry || OriginRequest.isIdempotent(method) || headers.contains { $0.0.lowercased() == "idempotency-key" }
    }

    public static let maxURLBytes = 8192
    public static let maxHeaderBytes = 64 * 1024
    /// The daemon's default (`--max-fetch-bytes`): 8 GiB; bodies stream, so this bounds disk and time, not memory.
    public static let defaultMaxBytes = 8 << 30
    public static let defaultMaxRedirects = 10

    /// A GET of `url` with the defaults: follow up to 10 redirects, the default cache mode, 8 GiB.
    public init(url: String, method: String = "GET", headers: [(String, String)] = [], body: [UInt8] = [],
                timeoutMs: Int? = nil, redirect: RedirectMode = .follow, maxRedirects: Int = FetchSpec.defaultMaxRedirects,
                maxBytes: Int = FetchSpec.defaultMaxBytes, cacheMode: CacheMode = .default, progress: Bool = false) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeoutMs = timeoutMs
        self.redirect = redirect
        self.maxRedirects = maxRedirects
        self.maxBytes = maxBytes
        self.cacheMode = cacheMode
        self.progress = progress
    }

    /// Why a URL is refused, or nil: absolute http(s) with a host, no whitespace or control characters, no
    /// credentials, within the length limit.
    public static func urlProblem(_ url: String) -> String? {
        if url.utf8.count > maxURLBytes { return "\"url\" is \(url.utf8.count) bytes; at most \(maxURLBytes) are allowed" }
        // A URL that normalises passes every check below (normalising refuses each of them): the common case,
        // and a remembered one (`NormalizedURLs`). The rest only words the refusal.
        if CacheKeyURL.normalize(url) != nil { return nil }
        if url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) { return "\"url\" contains spaces or control characters" }
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            let scheme = url.split(separator: ":", maxSplits: 1).first.map(String.init) ?? url
            return "only http and https URLs can be fetched (got \"\(scheme.truncatedForMessages)\")"
        }
        let rest = url.drop(while: { $0 != ":" }).dropFirst(3)
        let authority = rest.prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" })
        if authority.contains("@") { return "\"url\" must not carry credentials (user:password@); send an Authorization header" }
        if authority.isEmpty || authority.hasPrefix(":") { return "\"url\" has no host" }
        return "\"url\" is not a valid http(s) URL"
    }
}
