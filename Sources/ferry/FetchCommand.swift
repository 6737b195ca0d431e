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
        Usage: ferry fetch URL [-X METHOD] [-H 'Name: value']... [-d DATA]... [--json DATA] [-o FILE] [-w FORMAT]
                               [-i] [-I] [-f] [-s] [-A AGENT] [-m SECONDS] [--max-redirs N] [--cache MODE]

        Makes an HTTP request through ferryd and its shared HTTP cache. The body goes to stdout (or -o FILE).
        A URL without a scheme is http://. Redirects are followed (unlike curl, whose -L asks for it); --max-redirs 0
        answers with the redirect itself.
          -X, --request METHOD   method (default GET, or POST with -d or --json)
          -H, --header 'N: v'    add a header (repeatable)
          -d, --data DATA        request body (@FILE reads a file and drops its newlines, @- stdin); several are
                                 joined with &; implies POST and Content-Type application/x-www-form-urlencoded
              --data-binary DATA the same, byte for byte
              --json DATA        send DATA (@FILE, @-) as JSON: POST, Content-Type and Accept application/json
          -A, --user-agent UA    the User-Agent (default ferry/\(ferryVersion))
          -i, --include          print the status line and headers before the body
          -I, --head             HEAD request; print the status line and headers
          -f, --fail             exit 22 on HTTP status 400 or more (and print no body)
              --fail-with-body   the same, after writing the body
          -s, --silent           no progress bar
          -m, --max-time SECS    the whole transfer's limit (exit 28); with --retry, each try's
              --retry N          try again after a timeout or an HTTP 408, 429, 500, 502, 503 or 504, up to N
                                 times: 1 s, then 2, 4 … (the origin's Retry-After when it gives one); unlike
                                 curl, a retried try's body is not written, and one that wrote to stdout stands
              --retry-delay S    wait S seconds between tries instead; --retry-max-time S: none after S
              --retry-connrefused, --retry-all-errors   retry a refused connection too, or every failure
              --max-filesize N   refuse a larger body (exit 63)
              --max-redirs N     at most N redirects (default 10; -L is accepted and is the default)
              --cache MODE       default, no-store, reload, no-cache, force-cache, only-if-cached
              --timeout 10s      for each exchange with the origin
          -G, --get              send -d/--data-urlencode data in the URL's query, as a GET
              --data-urlencode D URL-encoded data (name=content, =content, name@file)
          -F, --form N=V         a multipart/form-data field (N=value, N=@file[;type=T], N=<file)
          -u, --user U:P         Basic authorization
          -k, --insecure         trust any certificate (this request bypasses the shared cache)
              --cacert FILE      trust only the CA certificates in FILE (the same)
              --compressed       accepted: ferryd always asks for every coding its libcurl decodes, and decodes
          -O, --remote-name      write to a file named as the URL's last path segment
          -v, --verbose          the request and the response's head on stderr, with the cache status
          -w, --write-out FMT    after the transfer: %{http_code} %{time_total} %{size_download} %{url_effective}
                                 %{num_redirects} %{content_type} %{ferry_cache} %{ferry_age}, or %{json} for all
        Exit codes as curl's: 0 done (any HTTP status, unless -f), 6 the host did not resolve, 7 no connection,
        22 -f and a status of 400 or more, 28 timeout, 35 TLS handshake, 47 too many redirects, 60 certificate,
        63 body too large; 1 any other failure, 2 usage, 3 no daemon.
        """

    func run() async throws(CommandFailure) {
        let words = Array(args.positionals.dropFirst())
        guard words.count == 1 else { throw CommandFailure(code: .usage, message: FetchCommand.usage) }
        var request = try fetchRequest(url: words[0])
        let output = try outputPath(request.url)
        let deadline = try maxTime()
        // -m also bounds each exchange with the origin: a body still arriving when the time is up is cut there
        // (the request's deadline covers the wait for the answer, the exchange's timeout the body that follows).
        if let deadline, request.timeout.map({ $0 > deadline }) ?? true { request.timeout = deadline }
        // -C: resume into -o FILE from its size (or the offset given), as curl's -C does.
        var resumeAt = 0
        if let at = args.value("continue-at") {
            guard let out = output else { throw CommandFailure(code: .usage, message: "-C needs -o FILE") }
            guard let n = at == "-" ? OutputFile.existingSize(out) : Int(at), n >= 0 else {
                throw CommandFailure(code: .usage, message: "-C takes '-' or a byte offset (got \(at))")
            }
            resumeAt = n
            if n > 0 { request.headers.append(HTTPHeader("Range", "bytes=\(n)-")) }
        }
        let retry = try RetryPolicy.parse(retries: args.value("retry"), delay: args.value("retry-delay"), maxTime: args.value("retry-max-time"),
                                          allErrors: args.has("retry-all-errors"), connectionRefused: args.has("retry-connrefused"))
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let firstTry = ContinuousClock.now
        var retriesMade = 0
        while true {
            let attempt = Attempt(policy: retry, retriesMade: retriesMade, firstTry: firstTry)
            do {
                return try await once(client, request, deadline: deadline, output: output, resumeAt: resumeAt, attempt)
            } catch {
                // A transient status was stopped at its head with its wait decided; a failure is decided here. Bytes
                // already on stdout cannot be taken back: that try stands.
                let problem = error.retryStatus ?? .failure(error.code)
                let decision = attempt.plannedWait.map { .retry(after: $0) }
                    ?? (attempt.wroteToStdout ? .giveUp : retry.decide(problem, retriesMade: retriesMade, elapsed: .now - firstTry))
                guard case .retry(let wait) = decision else { throw error }
                retriesMade += 1
                if !args.has("silent") || args.has("show-error") {
                    writeStderr(RetryPolicy.warning(problem, wait: wait, left: retry.retries - retriesMade + 1))
                }
                try? await Task.sleep(for: wait)
            }
        }
    }

    /// One try of `--retry`: whether its body reached stdout, and the wait decided when it stopped at the head of
    /// a transient status (a status that will be tried again is not written: no -i head, no body).
    final class Attempt {
        let policy: RetryPolicy
        let retriesMade: Int
        let firstTry: ContinuousClock.Instant
        var wroteToStdout = false
        private(set) var plannedWait: Duration?

        init(policy: RetryPolicy, retriesMade: Int, firstTry: ContinuousClock.Instant) {
            self.policy = policy
            self.retriesMade = retriesMade
            self.firstTry = firstTry
        }

        /// Throws when `head` is a status to try again.
        func check(_ head: FetchResponse) throws(CommandFailure) {
            guard policy.retriesStatus(head.status) else { return }
            let after = head.headers.first { $0.name.lowercased() == "retry-after" }.flatMap { Int($0.value.trimmingCharacters()) }
            let problem = RetryPolicy.Problem.status(head.status, retryAfter: after.map { .seconds($0) })
            guard case .retry(let wait) = policy.decide(problem, retriesMade: retriesMade, elapsed: .now - firstTry) else { return }
            plannedWait = wait
            throw CommandFailure(code: .operationFailed, message: "", retryStatus: problem)
        }
    }

    /// One try: the request, its head and body to `output` (a file, started afresh) or stdout.
    private func once(_ client: FerryClient, _ originalRequest: FetchRequest, deadline: Duration?, output: String?, resumeAt: Int,
                      _ attempt: Attempt) async throws(CommandFailure) {
        var request = originalRequest
        let started = ContinuousClock.now
        if args.has("verbose") { writeStderrRaw(FetchCommand.verboseRequest(request)) }
        let failOnError = args.has("fail") || args.has("fail-with-body"), bodyOnError = args.has("fail-with-body")
        if request.method == "HEAD" {
            let response = try await fetch(client, request, deadline: deadline, head: nil, sink: nil)
            if args.has("verbose") { writeStderrRaw(FetchCommand.verboseHead(response)) }
            try attempt.check(response)
            writeStdout(FetchCommand.headLines(response))
            return try finish(response, bytes: 0, started: started, failOnError: failOnError)
        }
        // The body goes to `-o FILE` or stdout as it arrives, never whole through this process's memory: -i prints
        // the head when it comes, -f stops at an error status before a byte is written.
        // A large complete body (a cache hit) comes as a descriptor and is copied in the kernel.
        request.bodyAsFile = true
        // `-o -` is stdout, as curl's: binary output to a terminal then goes through.
        let toTerminalAnyway = output == "-"
        let file = try output.flatMap { $0 == "-" ? nil : $0 }.map { path throws(CommandFailure) in
            resumeAt > 0 ? try OutputFile(appendingTo: path, size: resumeAt) : try OutputFile(path: path)
        }
        var complete = false, bytes = 0
        let response = try await fetch(client, request, deadline: deadline, head: { head throws(CommandFailure) in
            if args.has("verbose") { writeStderrRaw(FetchCommand.verboseHead(head)) }
            try attempt.check(head)
            if resumeAt > 0 { complete = try FetchCommand.checkResume(head, at: resumeAt) }
            if failOnError && !bodyOnError && head.status >= 400 && !complete {
                try finish(head, bytes: 0, started: started, failOnError: true)
            }
            if args.has("include") {
                attempt.wroteToStdout = true
                writeStdout(FetchCommand.headLines(head))
            }
        }, sink: { chunk throws(CommandFailure) in
            if complete { return }
            bytes += chunk.count
            if let file { return try file.append(chunk) }
            attempt.wroteToStdout = true
            if toTerminalAnyway { writeStdout(chunk) } else { try FetchCommand.toStdout(chunk) }
        }, fileSink: { body throws(CommandFailure) in
            if complete { return }
            bytes += body.length
            if let file { return try file.append(from: body) }
            attempt.wroteToStdout = true
            try copyToStdout(body)
        })
        try file?.commit()
        try finish(response, bytes: bytes, started: started, failOnError: failOnError)
    }

    /// After the transfer: `-w`'s line, then `-f`'s exit 22 for an error status.
    private func finish(_ response: FetchResponse, bytes: Int, started: ContinuousClock.Instant, failOnError: Bool) throws(CommandFailure) {
        if let format = args.value("write-out") {
            let elapsed = (ContinuousClock.now - started).components
            let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
            writeStdout(Array(WriteOut.render(format, WriteOut.Transfer(response: response, bytes: bytes, seconds: seconds)).utf8))
        }
        if failOnError && response.status >= 400 {
            throw CommandFailure(code: .httpError, message: "(22) The requested URL returned error: \(response.status)")
        }
    }

    /// Binary bytes to a terminal are refused, as curl refuses them: they would garble it (`-o FILE` or a pipe).
    static func toStdout(_ bytes: [UInt8]) throws(CommandFailure) {
        if isatty(1) == 1, bytes.prefix(2048).contains(0) {
            throw CommandFailure(code: .writeError, message: "Binary output can mess up your terminal. Use \"--output -\" to tell "
                                 + "ferry to output it to your terminal anyway, or consider \"--output <FILE>\" to save to a file.")
        }
        writeStdout(bytes)
    }

    /// `-m SECONDS` (fractions allowed, as curl's): the whole request's deadline.
    private func maxTime() throws(CommandFailure) -> Duration? {
        guard let text = args.value("max-time") else { return nil }
        guard let seconds = Double(text), seconds > 0, seconds < 1e7 else {
            throw CommandFailure(code: .usage, message: "-m/--max-time needs a number of seconds, not \"\(text)\"")
        }
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
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

    /// The status line and header fields as curl's -i prints them (`HTTP/1.1 200 OK`), then a blank line.
    static func headLines(_ r: FetchResponse) -> [UInt8] {
        var text = HTTPReason.statusLine(r.status) + "\r\n"
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
        if args.has("head") { request.method = "HEAD" }
        if let m = args.value("request") { request.method = m }
        if let n = args.value("max-redirs") {
            guard let v = Int(n), v >= -1 else { throw usage("--max-redirs needs a number, not \"\(n)\"") }
            request.maxRedirects = v < 0 ? 50 : v
            // As curl without -L: --max-redirs 0 answers with the redirect itself (with -L, more is an error).
            if v == 0 && !args.has("location") { request.redirect = .manual }
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

    /// `ferry fetch`'s request: `buildRequest`'s (shared with `ferry image`), and what only fetch takes — a URL
    /// without a scheme is http://, the body of `-d`/`--data-binary`/`--json`, the User-Agent, `--max-filesize`.
    func fetchRequest(url: String) throws(CommandFailure) -> FetchRequest {
        var request = try buildRequest(url: url.contains("://") ? url : "http://" + url)
        func has(_ name: String) -> Bool { request.headers.contains { $0.name.lowercased() == name } }
        var data = try args.allValues("data").map { v throws(CommandFailure) in try bodyBytes(v, keepNewlines: false) }
            + args.allValues("data-urlencode").map { v throws(CommandFailure) in Array(try CurlForms.dataURLEncode(v).utf8) }
            + args.allValues("data-binary").map { v throws(CommandFailure) in try bodyBytes(v, keepNewlines: true) }
        if args.has("get") && !data.isEmpty {
            // -G: the data goes into the query, and the request stays a GET.
            let query = String(decoding: Array(data.joined(separator: [UInt8(ascii: "&")])), as: UTF8.self)
            request.url += (request.url.contains("?") ? "&" : "?") + query
            data = []
        }
        let form = args.allValues("form")
        if !form.isEmpty {
            guard data.isEmpty, args.value("json") == nil else {
                throw CommandFailure(code: .usage, message: "-F and -d/--json: one kind of body or the other")
            }
            let boundary = "------------------------" + String(UInt64.random(in: 0...UInt64.max), radix: 16).leftPadded(16)
            let (body, type) = try CurlForms.multipart(form, boundary: boundary)
            request.body = body
            if !has("content-type") { request.headers.append(HTTPHeader("Content-Type", type)) }
            if args.value("request") == nil { request.method = "POST" }
        }
        request.insecure = args.has("insecure")
        if let path = args.value("cacert") { request.caPEM = String(decoding: try readFile(path), as: UTF8.self) }
        if let user = args.value("user"), !has("authorization") {
            request.headers.append(HTTPHeader("Authorization", CurlForms.basicAuthorization(user)))
        }
        if let json = args.value("json") {
            guard data.isEmpty else { throw CommandFailure(code: .usage, message: "--json and -d/--data-binary: one body or the other") }
            request.body = try bodyBytes(json, keepNewlines: true)
            if !has("content-type") { request.headers.append(HTTPHeader("Content-Type", "application/json")) }
            if !has("accept") { request.headers.append(HTTPHeader("Accept", "application/json")) }
        } else if !data.isEmpty {
            // Several -d are joined with &, as curl joins them.
            request.body = Array(data.joined(separator: [UInt8(ascii: "&")]))
            if !has("content-type") { request.headers.append(HTTPHeader("Content-Type", "application/x-www-form-urlencoded")) }
        }
        if args.value("json") != nil || !data.isEmpty, args.value("request") == nil, !args.has("head") { request.method = "POST" }
        if !has("user-agent") { request.headers.append(HTTPHeader("User-Agent", args.value("user-agent") ?? "ferry/\(ferryVersion)")) }
        if let n = args.value("max-filesize") {
            guard let v = parseByteSize(n), v > 0 else { throw CommandFailure(code: .usage, message: "--max-filesize needs a size in bytes, not \"\(n)\"") }
            request.maxBytes = v
        }
        return request
    }

    /// `@FILE` reads a file, `@-` stdin, anything else is the data itself. `-d` drops a file's carriage returns and
    /// newlines, as curl's does; `--data-binary` and `--json` keep every byte.
    private func bodyBytes(_ data: String, keepNewlines: Bool) throws(CommandFailure) -> [UInt8] {
        guard data.hasPrefix("@") else { return Array(data.utf8) }
        let path = String(data.dropFirst())
        let bytes = path == "-" ? readStdin() : try readFile(path)
        return keepNewlines ? bytes : bytes.filter { $0 != 0x0A && $0 != 0x0D }
    }

    /// With a terminal on stderr and no -s, a progress bar for downloads that are large or slow. With a `sink`, the
    /// head goes to `head` once known (before any of the body; throwing there stops the download), the body's
    /// chunks to `sink` as they come, and the response's body stays empty.
    /// Failures exit as curl's would for the same failure (`CurlExit`).
    private func fetch(_ client: FerryClient, _ request: FetchRequest, deadline: Duration?,
                       head: ((FetchResponse) throws(CommandFailure) -> Void)?,
                       sink: (([UInt8]) throws(CommandFailure) -> Void)?,
                       fileSink: ((BodyFile) throws(CommandFailure) -> Void)? = nil) async throws(CommandFailure) -> FetchResponse {
        do {
            return try await stream(client, request, deadline: deadline, head: head, sink: sink, fileSink: fileSink)
        } catch let e as FerryError {
            throw CommandFailure(code: CurlExit.code(for: e), message: CurlExit.message(e, url: request.url))
        } catch let e as CommandFailure {
            throw e
        } catch {
            throw CommandFailure(code: .operationFailed, message: "\(error)")
        }
    }

    private func stream(_ client: FerryClient, _ request: FetchRequest, deadline: Duration?,
                        head: ((FetchResponse) throws(CommandFailure) -> Void)?,
                        sink: (([UInt8]) throws(CommandFailure) -> Void)?,
                        fileSink: ((BodyFile) throws(CommandFailure) -> Void)?) async throws -> FetchResponse {
        let showBar = isatty(2) == 1 && !args.has("silent") && request.method != "HEAD"
        guard showBar || sink != nil else { return try await client.fetch(request, deadline: deadline) }
        do {
            var bar = showBar ? ProgressBar() : nil
            var body: [UInt8] = []
            var final: FetchResponse?
            for try await event in client.fetchStream(request, deadline: deadline) {
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
}

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
