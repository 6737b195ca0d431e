/// An http(s) URL cut into the parts `ferry fetch` names in its messages, `-v` and `-O`: the host and port (the
/// scheme's default when none is written) and the request target (path and query; "/" when there is none).
/// Text work only: the daemon parses and checks the URL it fetches.
///
/// ```swift
/// let u = URLParts("https://user@[::1]:8443/p/poster.jpg?x=1")
/// (u.host, u.port, u.target, u.path)   // ("::1", 8443, "/p/poster.jpg?x=1", "/p/poster.jpg")
/// ```
struct URLParts {
    let host: String
    let port: Int
    let target: String

    /// The target's path alone, without query or fragment.
    var path: Substring { target.prefix { $0 != "?" && $0 != "#" } }

    init(_ url: String) {
        var scheme = "", rest = Substring(url)
        if let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") {
            scheme = url[..<colon].lowercased()
            rest = url[url.index(colon, offsetBy: 3)...]
        }
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        // The fragment is never sent; "http://h?q" asks for "/?q", as curl sends them.
        let after = rest[end...].prefix { $0 != "#" }
        target = after.hasPrefix("/") ? String(after) : after.hasPrefix("?") ? "/" + after : "/"
        var authority = rest[..<end]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let defaultPort = scheme == "https" ? 443 : 80
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {  // [::1]:8080
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let tail = authority[authority.index(after: close)...]
            port = tail.hasPrefix(":") ? Int(tail.dropFirst()) ?? defaultPort : defaultPort
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = Int(authority[authority.index(after: colon)...]) ?? defaultPort
        } else {
            host = String(authority)
            port = defaultPort
        }
    }
}
