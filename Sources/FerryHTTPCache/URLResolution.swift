/// Reference resolution (RFC 3986 §5.2), used to turn `Location` / `Content-Location` values into the URLs
/// they name.
extension CacheKeyURL {
    /// The absolute, normalised URL that `reference` names when read relative to `base` (an absolute http(s)
    /// URL), or nil when either cannot be made into an http(s) URL.
    ///
    /// Supported: absolute URLs (kept as sent, then normalised), scheme-relative `//host/p`, absolute paths
    /// `/p`, relative paths `p`, `./p`, `../p` (dot segments removed as RFC 3986 §5.2.4 says, only for
    /// relative references), query-only `?q`, and the empty reference (the base without fragment).
    ///
    /// ```swift
    /// CacheKeyURL.resolve("../c?x=1", against: "http://a.test/b/d/e")  // "http://a.test/b/c?x=1"
    /// CacheKeyURL.resolve("//b.test/x", against: "https://a.test/")     // "https://b.test/x"
    /// ```
    public static func resolve(_ reference: String, against base: String) -> String? {
        guard let b = parse(base) else { return nil }
        var ref = reference
        if let hash = ref.utf8.firstIndex(of: 0x23) { ref = String(ref[..<hash]) }
        if hasScheme(ref) { return normalize(ref) }
        if ref.hasPrefix("//") { return normalize(b.scheme + ":" + ref) }

        var path: String
        var query: String?
        if let q = ref.utf8.firstIndex(of: 0x3F) {
            path = String(ref[..<q])
            query = String(ref[ref.utf8.index(after: q)...])
        } else {
            path = ref
        }
        var target = b
        if path.isEmpty {
            target.query = query ?? b.query
        } else {
            if !path.hasPrefix("/") {
                // merge (RFC 3986 §5.2.3): everything of the base path up to its last "/".
                let basePath = b.path
                let dir = basePath.utf8.lastIndex(of: 0x2F).map { String(basePath[...$0]) } ?? "/"
                path = dir + path
            }
            target.path = removeDotSegments(path)
            target.query = query
        }
        return parse(target.string)?.string
    }

    /// RFC 3986 §5.2.4, on "/"-separated segments.
    static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        // segments[0] is "" for an absolute path.
        for (i, seg) in segments.enumerated() where i > 0 {
            let isLast = i == segments.count - 1
            if seg == "." {
                if isLast { output.append("") }
            } else if seg == ".." {
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            } else {
                output.append(seg)
            }
        }
        return "/" + output.joined(separator: "/")
    }

    /// Whether a reference starts with `scheme ":"` (RFC 3986 §3.1).
    private static func hasScheme(_ ref: String) -> Bool {
        var first = true
        for c in ref.utf8 {
            if c == 0x3A { return !first }
            let isAlpha = (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
            let ok = isAlpha || (!first && ((c >= 0x30 && c <= 0x39) || c == 0x2B || c == 0x2D || c == 0x2E))
            if !ok { return false }
            first = false
        }
        return false
    }
}
