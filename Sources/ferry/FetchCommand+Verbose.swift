import FerryClient

/// `ferry fetch`'s `-v` (the request and the response's head on stderr, with where the answer came from) and `-O`
/// (the output file named after the URL).
///
/// ```text
/// $ ferry fetch -v -o /dev/null http://127.0.0.1:8080/r
/// > GET /r HTTP/1.1
/// > Host: 127.0.0.1:8080
/// > Accept: */*
/// > User-Agent: ferry/0.1.0
/// < HTTP/1.1 200 OK
/// * ferry cache: hit, age 3 s
/// ```
extension FetchCommand {
    /// `-o FILE`, or `-O`'s name from the URL (in the current directory, as curl's).
    func outputPath(_ url: String) throws(CommandFailure) -> String? {
        if let path = args.value("output") { return path }
        guard args.has("remote-name") else { return nil }
        guard let name = CurlForms.remoteName(url) else {
            throw CommandFailure(code: .writeError, message: "(23) Remote file name has no length")
        }
        return name
    }

    /// `-v`: the request as the daemon's libcurl sends it, in its order: the request line, `Host` (with the port
    /// unless it is the scheme's), `Accept: */*` unless one was given, the fields given (libcurl adds its
    /// `Accept-Encoding` too).
    static func verboseRequest(_ r: FetchRequest) -> String {
        let u = URLParts(r.url)
        let host = u.host.contains(":") ? "[\(u.host)]" : u.host
        let isDefaultPort = u.port == (r.url.lowercased().hasPrefix("https:") ? 443 : 80)
        var text = "* ferry: through ferryd's shared HTTP cache to \(u.host) port \(u.port)\n> \(r.method) \(u.target) HTTP/1.1\n"
        if !r.headers.contains(where: { $0.name.lowercased() == "host" }) { text += "> Host: \(host)\(isDefaultPort ? "" : ":\(u.port)")\n" }
        if !r.headers.contains(where: { $0.name.lowercased() == "accept" }) { text += "> Accept: */*\n" }
        for h in r.headers { text += "> \(h.name): \(h.value)\n" }
        if !r.body.isEmpty { text += "> (\(r.body.count) bytes of body)\n" }
        return text + ">\n"
    }

    /// `-v`: the response's head, and where it came from.
    static func verboseHead(_ r: FetchResponse) -> String {
        var text = "< " + HTTPReason.statusLine(r.status) + "\n"
        for h in r.headers { text += "< \(h.name): \(h.value)\n" }
        text += "<\n* ferry cache: \(r.cacheStatus?.rawValue ?? "none")" + (r.age > 0 ? ", age \(r.age) s" : "")
        return text + (r.redirects > 0 ? ", after \(r.redirects) redirect(s) to \(r.url)" : "") + "\n"
    }
}
