import FerryFetch
import FerryHTTPCache
import FerryProtocol

/// Reading the `fetch` arguments into a `FetchSpec`, and the pieces `image.get` shares with it (url, headers,
/// cache, timeout_ms), so both operations refuse the same things with the same messages. Each failure is an
/// `invalid_argument` with a precise message; nothing unchecked reaches the fetch engine.
///
/// ```swift
/// FetchArguments.parse(["url": "https://a.test/x", "cache": "no-store"], body: [], maxBytesLimit: 1 << 30)
/// // .success(FetchSpec(url: "https://a.test/x", cacheMode: .noStore))
/// ```
enum FetchArguments {
    /// The `fetch` arguments as a spec, or the first problem (checked in the order of PROTOCOL.md's table).
    static func parse(_ args: JSONObject, body: [UInt8], maxBytesLimit: Int) -> Result<FetchSpec, FetchFailure> {
        do throws(FetchFailure) {
            var spec = FetchSpec(url: try url(args), maxBytes: maxBytesLimit)
            spec.method = try method(args)
            spec.headers = try headers(args)
            spec.body = body
            if spec.method == "GET" || spec.method == "HEAD", !body.isEmpty {
                throw .invalidArgument("a \(spec.method) request cannot have a body")
            }
            spec.timeoutMs = try timeoutMs(args)
            spec.maxRedirects = try int(args, "max_redirects", 0...50) ?? FetchSpec.defaultMaxRedirects
            spec.maxBytes = try int(args, "max_bytes", 0...maxBytesLimit) ?? spec.maxBytes
            if let r = try string(args, "redirect") {
                guard let mode = RedirectMode(rawValue: r) else { throw .invalidArgument("\"redirect\" must be follow, manual or error") }
                spec.redirect = mode
            }
            spec.cacheMode = try cacheMode(args)
            if let p = args["progress"], p != .null {
                guard case .bool(let b) = p else { throw .invalidArgument("\"progress\" must be a boolean") }
                spec.progress = b
            }
            if let r = args["retry"], r != .null {
                guard case .bool(let b) = r else { throw .invalidArgument("\"retry\" must be a boolean") }
                spec.retry = b
            }
            spec.tls = try tls(args)
            // Vouched for by this client only: not from, nor into, the shared cache, nor shared with another request.
            if spec.tls != .system { spec.cacheMode = .noStore }
            return .success(spec)
        } catch {
            return .failure(error)
        }
    }

    /// `insecure` (a boolean: curl's -k) or `ca_pem` (the CA certificates to trust, PEM text: curl's --cacert).
    static func tls(_ args: JSONObject) throws(FetchFailure) -> TLSTrust {
        var insecure = false
        if let v = args["insecure"], v != .null {
            guard case .bool(let b) = v else { throw .invalidArgument("\"insecure\" must be a boolean") }
            insecure = b
        }
        guard let pem = try string(args, "ca_pem") else { return insecure ? .insecure : .system }
        guard !insecure else { throw .invalidArgument("\"insecure\" and \"ca_pem\": one or the other") }
        guard pem.utf8.count <= TLSTrust.maxPEMBytes, pem.contains("-----BEGIN CERTIFICATE-----") else {
            throw .invalidArgument("\"ca_pem\" must hold PEM certificates (\"-----BEGIN CERTIFICATE-----\"), at most \(TLSTrust.maxPEMBytes) bytes")
        }
        return .pem(Array(pem.utf8))
    }

    /// `url`: required, an absolute http(s) URL (`FetchSpec.urlProblem`).
    static func url(_ args: JSONObject) throws(FetchFailure) -> String {
        guard let urlValue = args["url"] else { throw .invalidArgument("\"url\" is required") }
        guard case .string(let url) = urlValue else { throw .invalidArgument("\"url\" must be a string") }
        if let problem = FetchSpec.urlProblem(url) { throw .invalidArgument(problem) }
        return url
    }

    /// `method`: a token; the common methods in any case, as curl takes them. Default GET.
    static func method(_ args: JSONObject) throws(FetchFailure) -> String {
        guard let m = args["method"], m != .null else { return "GET" }
        guard case .string(let s) = m, HTTPSyntax.isToken(s), s.utf8.count <= 32 else {
            throw .invalidArgument("\"method\" must be an HTTP method token (e.g. GET, POST)")
        }
        // Methods are case-sensitive (RFC 9110 §9.1); the common ones are accepted in any case, as curl does.
        let upper = s.uppercased()
        return ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].contains(upper) ? upper : s
    }

    /// Framing and routing belong to the daemon: a client's `Host` would reach the origin while the response is
    /// stored under the URL's key (one client poisoning every other's cache), and its `Content-Length` or
    /// `Transfer-Encoding` could frame a second, smuggled request inside the body.
    static let daemonOwned: Set<String> = ["host", "content-length", "transfer-encoding", "connection", "keep-alive", "te",
                                           "trailer", "upgrade"]

    /// Why a client may not send this header, or nil.
    static func daemonOwnedProblem(_ name: String) -> String? {
        let lower = name.lowercased()
        guard daemonOwned.contains(lower) || lower.hasPrefix("proxy-") else { return nil }
        if lower == "host" { return "header Host is not accepted: ferryd sends the URL's host (put the host in \"url\")" }
        return "header \(name.truncatedForMessages) is not accepted: ferryd frames the request and manages the connection itself"
    }

    /// Why a header value breaks RFC 9110's field-value grammar (§5.5: visible characters, obs-text, spaces and
    /// tabs), or nil.
    static func valueProblem(name: String, value: String) -> String? {
        for b in value.utf8 where b < 0x20 && b != 0x09 || b == 0x7F {
            if b == 0x0D || b == 0x0A || b == 0 { return "the value of header \(name) contains CR, LF or NUL" }
            let hex = String(b, radix: 16, uppercase: true)
            return "the value of header \(name) contains the control character 0x\(hex.count == 1 ? "0" + hex : hex); "
                + "a field value is visible characters, spaces and tabs (RFC 9110 section 5.5)"
        }
        return nil
    }

    /// `headers`: `[name, value]` pairs, names tokens, values field-values, none of the daemon's own, 64 KiB at most
    /// in all.
    static func headers(_ args: JSONObject) throws(FetchFailure) -> [(String, String)] {
        guard let h = args["headers"], h != .null else { return [] }
        guard case .array(let items) = h else { throw .invalidArgument("\"headers\" must be an array of [name, value] pairs") }
        var headers: [(String, String)] = []
        var total = 0
        for item in items {
            guard case .array(let pair) = item, pair.count == 2, case .string(let name) = pair[0], case .string(let value) = pair[1] else {
                throw .invalidArgument("each header must be a [name, value] pair of strings")
            }
            guard HTTPSyntax.isToken(name) else { throw .invalidArgument("header name \"\(name.truncatedForMessages)\" is not a valid field name") }
            if let problem = daemonOwnedProblem(name) ?? valueProblem(name: name, value: value) { throw .invalidArgument(problem) }
            total += name.utf8.count + value.utf8.count
            headers.append((name, HTTPSyntax.trimmingOWS(value)))
        }
        if total > FetchSpec.maxHeaderBytes { throw .invalidArgument("the request headers are larger than \(FetchSpec.maxHeaderBytes) bytes") }
        return headers
    }

    /// `timeout_ms`: 1 ms to a day, for each exchange with the origin.
    static func timeoutMs(_ args: JSONObject) throws(FetchFailure) -> Int? { try int(args, "timeout_ms", 1...86_400_000) }

    /// `cache`: a cache mode, default `default`.
    static func cacheMode(_ args: JSONObject) throws(FetchFailure) -> CacheMode {
        guard let c = try string(args, "cache") else { return .default }
        guard let mode = CacheMode(rawValue: c) else {
            throw .invalidArgument("\"cache\" must be default, no-store, reload, no-cache, force-cache or only-if-cached")
        }
        return mode
    }

    static func int(_ args: JSONObject, _ name: String, _ range: ClosedRange<Int>) throws(FetchFailure) -> Int? {
        guard let v = args[name], v != .null else { return nil }
        guard case .int(let n) = v, n >= range.lowerBound, n <= range.upperBound else {
            throw .invalidArgument("\"\(name)\" must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(n)
    }

    static func string(_ args: JSONObject, _ name: String) throws(FetchFailure) -> String? {
        guard let v = args[name], v != .null else { return nil }
        guard case .string(let s) = v else { throw .invalidArgument("\"\(name)\" must be a string") }
        return s
    }
}
