/// One endpoint of a REST API, described as a value, so app code can list an API as an enum and every call site
/// reads as `try await client.fetch(Quotes.random)`.
///
/// ```swift
/// enum Quotes: Endpoint {
///     case random
///     case search(String)
///     var baseURL: String { "https://api.example.com/v1" }
///     var path: String {
///         switch self { case .random: "/quotes/random"; case .search: "/quotes" }
///     }
///     var queryItems: [(String, String)] {
///         if case .search(let q) = self { return [("query", q)] } else { return [] }
///     }
///     var headers: [HTTPHeader] { [HTTPHeader("Authorization", "Bearer \(token)"), HTTPHeader("X-Api-Version", "2")] }
/// }
/// let quote = try await client.fetch(Quotes.search("wisdom & courage")).decode(Quote.self)  // FerryCodable
/// ```
public protocol Endpoint: Sendable {
    var baseURL: String { get }
    var path: String { get }
    /// Default "GET".
    var method: String { get }
    /// Percent-encoded into the query string, in order. Default none.
    var queryItems: [(String, String)] { get }
    /// Default none.
    var headers: [HTTPHeader] { get }
    /// Default empty.
    var body: [UInt8] { get }
    /// The body when making it may fail (encoding a value as JSON, reading a file): thrown from `fetch`, before
    /// anything is sent. Default: `body`.
    func makeBody() throws -> [UInt8]
    /// The request `FerryClient.fetch(_:)` sends. Default: the URL, method, headers and cache mode with
    /// `makeBody()`'s body (FerryCodable's `JSONEndpoint` adds its Content-Type).
    func makeRequest() throws -> FetchRequest
    /// Default: the daemon's normal HTTP caching.
    var cache: FetchRequest.CacheMode? { get }
}

extension Endpoint {
    public var method: String { "GET" }
    public var queryItems: [(String, String)] { [] }
    public var headers: [HTTPHeader] { [] }
    public var body: [UInt8] { [] }
    public func makeBody() throws -> [UInt8] { body }
    public var cache: FetchRequest.CacheMode? { nil }

    /// The URL: base URL and path joined with exactly one "/", then the query.
    public var url: String {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        var url = base + (path.isEmpty || path.hasPrefix("/") ? path : "/" + path)
        if !queryItems.isEmpty {
            url += (url.contains("?") ? "&" : "?")
                + queryItems.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&")
        }
        return url
    }

    public var request: FetchRequest {
        FetchRequest(url, method: method, headers: headers, body: body, cache: cache)
    }

    /// The request with `makeBody()`'s body; what `FerryClient.fetch(_:)` sends.
    public func makeRequest() throws -> FetchRequest {
        FetchRequest(url, method: method, headers: headers, body: try makeBody(), cache: cache)
    }
}

/// RFC 3986 percent-encoding for query components: everything but the unreserved characters is encoded, so `&`,
/// `=`, `+` and spaces in values cannot change the query's structure.
///
/// ```swift
/// PercentEncoding.encode("a b&c")   // "a%20b%26c"
/// ```
public enum PercentEncoding {
    public static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(b >> 4)], hex[Int(b & 15)]], as: UTF8.self)
            }
        }
        return out
    }
}
