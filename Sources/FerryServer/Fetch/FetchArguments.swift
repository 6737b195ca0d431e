import FerryHTTPCache
import FerryProtocol

/// A `fetch` request, checked: everything libcurl will be given has been validated here first, so a bad argument
/// is an `invalid_argument` with a precise message and never reaches the network.
struct FetchSpec: Sendable {
    var url: String
    var method: String
    var headers: [(String, String)]
    var body: [UInt8]
    var timeoutMs: Int?
    var redirect: RedirectMode
    var maxRedirects: Int
    var maxBytes: Int
    var cacheMode: CacheMode
    var progress: Bool

    static let maxURLBytes = 8192
    static let maxHeaderBytes = 64 * 1024
    static let defaultMaxBytes = 64 * 1024 * 1024

    /// The `fetch` arguments as a spec, or the message of the first problem.
    static func parse(_ args: JSONObject, body: [UInt8], maxBytesLimit: Int) -> Result<FetchSpec, FetchFailure> {
        func bad(_ m: String) -> Result<FetchSpec, FetchFailure> { .failure(.invalidArgument(m)) }
        guard let urlValue = args["url"] else { return bad("\"url\" is required") }
        guard case .string(let url) = urlValue else { return bad("\"url\" must be a string") }
        if let problem = urlProblem(url) { return bad(problem) }
        var method = "GET"
        if let m = args["method"], m != .null {
            guard case .string(let s) = m, isToken(s), s.utf8.count <= 32 else {
                return bad("\"method\" must be an HTTP method token (e.g. GET, POST)")
            }
            // Methods are case-sensitive (RFC 9110 §9.1); the common ones are accepted in any case, as curl does.
            let upper = s.uppercased()
            method = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].contains(upper) ? upper : s
        }
        var headers: [(String, String)] = []
        if let h = args["headers"], h != .null {
            guard case .array(let items) = h else { return bad("\"headers\" must be an array of [name, value] pairs") }
            var total = 0
            for item in items {
                guard case .array(let pair) = item, pair.count == 2, case .string(let name) = pair[0],
                      case .string(let value) = pair[1] else { return bad("each header must be a [name, value] pair of strings") }
                guard isToken(name) else { return bad("header name \"\(name.truncatedForMessages)\" is not a valid field name") }
                guard value.utf8.allSatisfy({ $0 != 0x0D && $0 != 0x0A && $0 != 0 }) else {
                    return bad("the value of header \(name) contains CR, LF or NUL")
                }
                total += name.utf8.count + value.utf8.count
                headers.append((name, value.trimmingWhitespace()))
            }
            if total > maxHeaderBytes { return bad("the request headers are larger than \(maxHeaderBytes) bytes") }
        }
        var spec = FetchSpec(url: url, method: method, headers: headers, body: body, timeoutMs: nil, redirect: .follow,
                             maxRedirects: 10, maxBytes: min(defaultMaxBytes, maxBytesLimit), cacheMode: .default, progress: false)
        if method == "GET" || method == "HEAD", !body.isEmpty { return bad("a \(method) request cannot have a body") }
        do throws(FetchFailure) {
            spec.timeoutMs = try int(args, "timeout_ms", 1...86_400_000)
            spec.maxRedirects = try int(args, "max_redirects", 0...50) ?? 10
            spec.maxBytes = try int(args, "max_bytes", 0...maxBytesLimit) ?? spec.maxBytes
            if let r = try string(args, "redirect") {
                guard let mode = RedirectMode(rawValue: r) else { throw .invalidArgument("\"redirect\" must be follow, manual or error") }
                spec.redirect = mode
            }
            if let c = try string(args, "cache") {
                guard let mode = CacheMode(rawValue: c) else {
                    throw .invalidArgument("\"cache\" must be default, no-store, reload, no-cache, force-cache or only-if-cached")
                }
                spec.cacheMode = mode
            }
            if let p = args["progress"], p != .null {
                guard case .bool(let b) = p else { throw .invalidArgument("\"progress\" must be a boolean") }
                spec.progress = b
            }
        } catch {
            return .failure(error)
        }
        return .success(spec)
    }

    /// Why a URL is refused, or nil: absolute http(s) with a host, no whitespace or control characters, no
    /// credentials, within the length limit.
    static func urlProblem(_ url: String) -> String? {
        if url.utf8.count > maxURLBytes { return "\"url\" is \(url.utf8.count) bytes; at most \(maxURLBytes) are allowed" }
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
        guard CacheKeyURL.normalize(url) != nil else { return "\"url\" is not a valid http(s) URL" }
        return nil
    }

    /// RFC 9110 `token`: the characters of methods and field names.
    static func isToken(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { b in
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return "!#$%&'*+-.^_`|~".utf8.contains(b)
            }
        }
    }

    private static func int(_ args: JSONObject, _ name: String, _ range: ClosedRange<Int>) throws(FetchFailure) -> Int? {
        guard let v = args[name], v != .null else { return nil }
        guard case .int(let n) = v, n >= range.lowerBound, n <= range.upperBound else {
            throw .invalidArgument("\"\(name)\" must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(n)
    }

    private static func string(_ args: JSONObject, _ name: String) throws(FetchFailure) -> String? {
        guard let v = args[name], v != .null else { return nil }
        guard case .string(let s) = v else { throw .invalidArgument("\"\(name)\" must be a string") }
        return s
    }

    /// The request as the cache policy sees it.
    var cacheRequest: CacheRequest {
        CacheRequest(method: method, url: url, headers: HTTPFields(headers), mode: cacheMode)
    }
}
