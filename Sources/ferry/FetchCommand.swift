#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryClient
import FerryProtocol

/// `ferry fetch URL`: HTTP through ferryd's shared cache, with curl's habits. The body goes to stdout (or `-o`);
/// `-i` puts the status line and headers first, `-I` sends HEAD and prints only those; `-f` exits 22 on a status
/// of 400 or more, as curl does; `--json` prints the whole reply as one JSON object.
struct FetchCommand {
    let args: ParsedArgs
    let commands: Commands

    static let usage = """
        Usage: ferry fetch URL [-X METHOD] [-H 'Name: value']... [-d DATA | --data-binary @FILE] [-o FILE]
                               [-i] [-I] [-f] [-s] [--max-redirs N] [--cache MODE] [--timeout 10s] [--json]

        Makes an HTTP request through ferryd and its shared HTTP cache. The body goes to stdout (or -o FILE).
          -X, --request METHOD   method (default GET, or POST with -d)
          -H, --header 'N: v'    add a header (repeatable)
          -d, --data DATA        request body (@FILE reads a file, @- stdin); implies POST
              --data-binary DATA the same, byte for byte
          -i, --include          print the status line and headers before the body
          -I, --head             HEAD request; print the status line and headers
          -f, --fail             exit 22 on HTTP status 400 or more (and print no body)
          -s, --silent           no progress bar
              --max-redirs N     at most N redirects (default 10; -L is accepted and is the default)
              --cache MODE       default, no-store, reload, no-cache, force-cache, only-if-cached
              --timeout 10s      for each exchange with the origin
              --json             print status, headers, cache status, timing and the body as one JSON object
        Exit codes: 0 done (any HTTP status, unless -f), 1 the request failed, 2 usage, 3 no daemon, 22 with -f.
        """

    func run() async throws(CommandFailure) {
        let words = Array(args.positionals.dropFirst())
        guard words.count == 1 else { throw CommandFailure(code: .usage, message: FetchCommand.usage) }
        var request = try buildRequest(url: words[0])
        // -C: resume into -o FILE from its size (or the offset given), as curl's -C does.
        var resumeAt = 0
        if let at = args.value("continue-at") {
            guard let out = args.value("output") else { throw CommandFailure(code: .usage, message: "-C needs -o FILE") }
            guard let n = at == "-" ? OutputFile.existingSize(out) : Int(at), n >= 0 else {
                throw CommandFailure(code: .usage, message: "-C takes '-' or a byte offset (got \(at))")
            }
            resumeAt = n
            if n > 0 { request.headers.append(HTTPHeader("Range", "bytes=\(n)-")) }
        }
        let client = try await commands.launcher.connect()
        defer { client.close() }
        // The body goes to `-o FILE` or stdout as it arrives, never whole through this process's memory: -i prints
        // the head when it comes, -f stops at an error status before a byte is written.
        let plain = !args.has("json") && request.method != "HEAD"
        if plain {
            // A large complete body (a cache hit) comes as a descriptor and is copied in the kernel.
            request.bodyAsFile = true
            let file = try args.value("output").map { path throws(CommandFailure) in
                resumeAt > 0 ? try OutputFile(appendingTo: path, size: resumeAt) : try OutputFile(path: path)
            }
            var complete = false
            _ = try await fetch(client, request, head: { head throws(CommandFailure) in
                if resumeAt > 0 { complete = try FetchCommand.checkResume(head, at: resumeAt) }
                if args.has("fail") && head.status >= 400 && !complete {
                    throw CommandFailure(code: .httpError, message: "The requested URL returned error: \(head.status)")
                }
                if args.has("include") { writeStdout(FetchCommand.headLines(head)) }
            }, sink: { bytes throws(CommandFailure) in
                if complete { return }
                if let file { try file.append(bytes) } else { writeStdout(bytes) }
            }, fileSink: { body throws(CommandFailure) in
                if complete { return }
                if let file { try file.append(from: body) } else { try copyToStdout(body) }
            })
            try file?.commit()
            return
        }
        let response = try await fetch(client, request, head: nil, sink: nil)
        try output(response, head: request.method == "HEAD")
    }

    /// `-C`: the answer must be the rest (a 206 from `at`); a 416 means the file is complete already (true). Anything
    /// else (a 200: the origin ignores ranges, or its copy changed) cannot be appended: exit 33, as curl does.
    static func checkResume(_ head: FetchResponse, at: Int) throws(CommandFailure) -> Bool {
        if head.status == 416 { return true }
        let start = head.header("content-range").flatMap { v in v.lowercased().hasPrefix("bytes ") ? Int(v.dropFirst(6).prefix { $0 != "-" }) : nil }
        guard head.status == 206, start == at else {
            throw CommandFailure(code: .cannotResume, message: "HTTP server doesn't seem to support byte ranges. Cannot resume.")
        }
        return false
    }

    static func headLines(_ r: FetchResponse) -> [UInt8] {
        var text = "HTTP \(r.status)\r\n"
        for h in r.headers { text += "\(h.name): \(h.value)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    func buildRequest(url: String) throws(CommandFailure) -> FetchRequest {
        func usage(_ m: String) -> CommandFailure { CommandFailure(code: .usage, message: m) }
        var request = FetchRequest(url)
        for line in args.allValues("header") {
            guard let colon = line.firstIndex(of: ":") else { throw usage("-H needs 'Name: value', not \"\(line)\"") }
            let name = String(line[..<colon]).trimmingCharacters(), value = String(line[line.index(after: colon)...]).trimmingCharacters()
            guard !name.isEmpty else { throw usage("-H needs a header name: \"\(line)\"") }
            request.headers.append(HTTPHeader(name, value))
        }
        if let data = args.value("data-binary") ?? args.value("data") {
            request.body = try bodyBytes(data)
            request.method = "POST"
            if !request.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
                request.headers.append(HTTPHeader("Content-Type", "application/x-www-form-urlencoded"))
            }
        }
        if args.has("head") { request.method = "HEAD" }
        if let m = args.value("request") { request.method = m }
        if let n = args.value("max-redirs") {
            guard let v = Int(n), v >= -1 else { throw usage("--max-redirs needs a number, not \"\(n)\"") }
            request.maxRedirects = v < 0 ? 50 : v
        }
        if let c = args.value("cache") {
            guard let mode = FetchRequest.CacheMode(rawValue: c) else {
                throw usage("--cache must be default, no-store, reload, no-cache, force-cache or only-if-cached")
            }
            request.cache = mode
        }
        if let t = args.value("timeout") {
            do { request.timeout = .milliseconds(try parseDurationMs(t)) } catch { throw usage(error.message) }
        }
        return request
    }

    /// `-d @FILE` reads a file, `-d @-` stdin, anything else is the data itself.
    private func bodyBytes(_ data: String) throws(CommandFailure) -> [UInt8] {
        guard data.hasPrefix("@") else { return Array(data.utf8) }
        let path = String(data.dropFirst())
        return path == "-" ? readStdin() : try readFile(path)
    }

    /// With a terminal on stderr and no -s, a progress bar for downloads that are large or slow. With a `sink`, the
    /// head goes to `head` once known (before any of the body; throwing there stops the download), the body's
    /// chunks to `sink` as they come, and the response's body stays empty.
    private func fetch(_ client: FerryClient, _ request: FetchRequest,
                       head: ((FetchResponse) throws(CommandFailure) -> Void)?,
                       sink: (([UInt8]) throws(CommandFailure) -> Void)?,
                       fileSink: ((BodyFile) throws(CommandFailure) -> Void)? = nil) async throws(CommandFailure) -> FetchResponse {
        let showBar = isatty(2) == 1 && !args.has("silent") && request.method != "HEAD"
        guard showBar || sink != nil else {
            return try await commands.run { try await client.fetch(request) }
        }
        return try await commands.run {
            var bar = showBar ? ProgressBar() : nil
            var body: [UInt8] = []
            var final: FetchResponse?
            for try await event in client.fetchStream(request) {
                switch event {
                case .head(let r): try head?(r)
                case .progress(let received, let total): bar?.update(received: received, total: total)
                case .chunk(let bytes): if let sink { try sink(bytes) } else { body += bytes }
                case .response(let r):
                    final = r
                    if let file = r.file { if let fileSink { try fileSink(file) } else { body += try file.bytes() } }
                }
            }
            bar?.finish()
            guard var response = final else { throw CommandFailure(code: .operationFailed, message: "the daemon sent no response") }
            response.body = body
            return response
        }
    }

    /// `--json` and `-I` (HEAD): the response once it is complete.
    private func output(_ response: FetchResponse, head: Bool) throws(CommandFailure) {
        if args.has("json") {
            print(jsonLine(.object(FetchCommand.json(response))))
        } else {
            if args.has("include") || head { writeStdout(FetchCommand.headLines(response)) }
            if !head && !(args.has("fail") && response.status >= 400) {
                if let out = args.value("output") { try writeFile(out, response.body) } else { writeStdout(response.body) }
            }
        }
        if args.has("fail") && response.status >= 400 {
            throw CommandFailure(code: .httpError, message: "The requested URL returned error: \(response.status)")
        }
    }

    static func json(_ r: FetchResponse) -> JSONObject {
        var timing = JSONObject()
        for (k, v) in r.timing.sorted(by: { $0.key < $1.key }) { timing[k] = .double(v) }
        let text = String(validating: r.body, as: UTF8.self)
        return [
            "status": .int(Int64(r.status)), "url": .string(r.url), "redirects": .int(Int64(r.redirects)),
            "headers": .array(r.headers.map { .array([.string($0.name), .string($0.value)]) }),
            "cache": .object(["status": .string(r.cacheStatus?.rawValue ?? ""), "age_s": .int(Int64(r.age))]),
            "timing": .object(timing),
            "body": text.map { .string($0) } ?? .null,
            "body_base64": text == nil ? .string(Base64.encode(r.body)) : .null,
            "size": .int(Int64(r.body.count)),
        ]
    }
}

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
