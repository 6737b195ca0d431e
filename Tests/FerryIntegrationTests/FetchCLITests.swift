import Foundation
import Testing
import FerryProtocol

/// `ferry fetch` keeps curl's promises: each case runs curl itself on the same request to the same origin, and
/// compares exit codes, what the origin received, and what was printed.
extension IntegrationTests {
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
struct FetchCLITests {
    static let curl = "/usr/bin/curl"

    /// The test origin and a daemon, stopped together.
    struct Rig {
        let origin: OriginServer
        let daemon: Daemon

        init() throws {
            origin = try OriginServer()
            do { daemon = try Daemon() } catch {
                origin.stop()
                throw error
            }
        }

        func stop() {
            daemon.stop()
            origin.stop()
        }
    }

    func ferry(_ args: [String], _ daemon: Daemon) throws -> (status: Int32, out: String, err: String) {
        try runCommand(Binaries.ferry, ["fetch", "-s"] + args, environment: ["FERRY_SOCKET": daemon.socket])
    }

    func curl(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
        try runCommand(Self.curl, ["-s", "-L"] + args)
    }

    /// curl's exit codes by failure: 6 resolve, 7 connect, 28 timeout, 47 redirects, 63 size, 22 with -f; the
    /// message names the host (and port).
    @Test func failuresExitAsCurlsDo() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let (origin, daemon) = (rig.origin, rig.daemon)
        let cases: [([String], Int32)] = [
            (["http://nosuch.invalid/"], 6),
            (["http://127.0.0.1:1/"], 7),
            (["-m", "0.5", origin.url("/slow?size=10&chunks=2&interval_ms=2000&cc=no-store")], 28),
            (["--max-redirs", "1", origin.url("/redirect/3?cc=no-store")], 47),
            (["--max-filesize", "100", origin.url("/r?size=1000&cc=no-store")], 63),
            (["-f", origin.url("/r?status=404&cc=no-store")], 22),
            ([origin.url("/r?status=404&cc=no-store")], 0),
        ]
        for (args, code) in cases {
            let mine = try ferry(args, daemon), theirs = try curl(args)
            #expect(theirs.status == code, "curl \(args): \(theirs.status) \(theirs.err)")
            #expect(mine.status == code, "ferry fetch \(args): \(mine.status) \(mine.err)")
        }
        #expect(try ferry(["http://nosuch.invalid/"], daemon).err.contains("(6) Could not resolve host: nosuch.invalid"))
        #expect(try ferry(["http://127.0.0.1:1/"], daemon).err.contains("(7) Failed to connect to 127.0.0.1 port 1"))
    }

    /// What the origin receives, compared with curl's request byte for byte (method, body, the fields that matter).
    @Test func requestsArriveAsCurlsDo() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let (origin, daemon) = (rig.origin, rig.daemon)
        let dir = TempDir()
        defer { dir.remove() }
        try Data("a=1\nb=2\r\n".utf8).write(to: URL(fileURLWithPath: dir.path + "/form.txt"))
        let url = origin.url("/echo?cc=no-store")
        func seen(_ out: String) throws -> (method: String, body: String, fields: [String: String]) {
            let v = try JSONParser.parse(Array(out.utf8))
            var fields: [String: String] = [:]
            for pair in v["headers"]?.arrayValue ?? [] {
                let name = pair.arrayValue?.first?.stringValue?.lowercased() ?? ""
                if ["content-type", "accept", "user-agent", "authorization"].contains(name) { fields[name] = pair.arrayValue?[1].stringValue }
            }
            // A multipart boundary is random: the same placeholder on both sides.
            func masked(_ s: String) -> String {
                s.replacingOccurrences(of: #"-{20,}[0-9a-f]+"#, with: "BOUNDARY", options: .regularExpression)
            }
            return ((v["method"]?.stringValue ?? "") + " " + (v["query"]?.stringValue ?? ""), masked(v["body"]?.stringValue ?? ""),
                    fields.mapValues(masked))
        }
        let cases: [[String]] = [
            ["-d", "a=1", "-d", "b=2"],                     // joined with &
            ["-d", "@" + dir.path + "/form.txt"],           // newlines dropped
            ["--data-binary", "@" + dir.path + "/form.txt"], // kept
            ["--json", #"{"a":1}"#],                          // POST, JSON content type and accept
            ["-X", "PUT", "-d", "x"],
            ["-A", "probe/1"],
            ["-G", "-d", "a=1", "--data-urlencode", "q=hello world&x"],  // into the query
            ["--data-urlencode", "q=é ü", "--data-urlencode", "=raw&"],
            ["-u", "alice:s3cret"],
            ["-F", "name=ferry", "-F", "up=@" + dir.path + "/form.txt;type=text/plain"],
        ]
        for args in cases {
            let mine = try seen(try ferry(args + [url], daemon).out), theirs = try seen(try curl(args + [url]).out)
            #expect(mine.method == theirs.method && mine.body == theirs.body, "\(args): \(mine) / \(theirs)")
            #expect(mine.fields["content-type"] == theirs.fields["content-type"], "\(args)")
            #expect(mine.fields["authorization"] == theirs.fields["authorization"], "\(args)")
            if args.contains("--json") { #expect(mine.fields["accept"] == "application/json") }
            if args.contains("-A") { #expect(mine.fields["user-agent"] == "probe/1") }
        }
        #expect(try seen(try ferry([url], daemon).out).fields["user-agent"] == "ferry/0.1.0", "the default User-Agent")
        // A URL without a scheme is http://.
        let bare = String(url.dropFirst("http://".count))
        #expect(try seen(try ferry([bare], daemon).out).method.hasPrefix("GET "), "http:// added")
    }

    /// -i's status line, -w's variables, and options of other commands refused.
    @Test func outputAndUsageAsCurlsAre() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let (origin, daemon) = (rig.origin, rig.daemon)
        let url = origin.url("/r?size=30&cc=max-age%3D60")
        let mine = try ferry(["-i", url], daemon), theirs = try curl(["-i", url])
        #expect(mine.out.components(separatedBy: "\r\n").first == theirs.out.components(separatedBy: "\r\n").first, "\(mine.out.prefix(40))")
        #expect(mine.out.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let format = "%{http_code} %{size_download} %{url_effective} %{num_redirects}\\n"
        let written = try ferry(["-o", "/dev/null", "-w", format, url], daemon), curls = try curl(["-o", "/dev/null", "-w", format, url])
        #expect(written.out == curls.out && written.out == "200 30 \(url) 0\n", "\(written.out) / \(curls.out)")
        #expect(try ferry(["-o", "/dev/null", "-w", "%{ferry_cache}", url], daemon).out == "hit", "the second time, from the cache")
        let json = try JSONParser.parse(Array(try ferry(["-o", "/dev/null", "-w", "%{json}", url], daemon).out.utf8))
        #expect(json["http_code"]?.intValue == 200 && json["size_download"]?.intValue == 30 && json["ferry_cache"]?.stringValue == "hit")
        // --max-redirs 0 without -L: the redirect itself, as curl's.
        let redirect = origin.url("/redirect/2?cc=no-store")
        let hop = try ferry(["-i", "--max-redirs", "0", redirect], daemon), curlHop = try runCommand(Self.curl, ["-s", "-i", "--max-redirs", "0", redirect])
        #expect(hop.status == 0 && hop.out.hasPrefix("HTTP/1.1 302 Found") && curlHop.out.hasPrefix("HTTP/1.1 302 Found"), "\(hop)")
        // -O: the file is named after the URL, in the current directory.
        let dir = TempDir()
        defer { dir.remove() }
        let named = try runCommand("/bin/sh", ["-c", "cd '\(dir.path)' && '\(Binaries.ferry)' fetch -s -O '\(origin.url("/r?size=7"))'"],
                                   environment: ["FERRY_SOCKET": daemon.socket])
        #expect(named.status == 0 && (try? Data(contentsOf: URL(fileURLWithPath: dir.path + "/r")))?.count == 7, "\(named)")
        let misplaced = try ferry(["--ttl", "5s", url], daemon)
        #expect(misplaced.status == 2 && misplaced.err.contains("--ttl is not an option of ferry fetch"), "\(misplaced.err)")
    }

    /// -k and --cacert as curl's, for this request only: what it fetched is not stored, so a request trusting the
    /// daemon's store alone still gets curl's 60, and the origin is asked every time.
    @Test(.enabled(if: NginxServer.binary != nil)) func tlsTrustPerRequestAndNeverShared() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let nginx = try NginxServer(upstream: rig.origin.port)
        defer { nginx.stop() }
        let url = nginx.url("/up/r?size=12&cc=max-age%3D600")  // proxied to the test origin, which counts
        for (args, code) in [([url], Int32(60)), (["-k", url], 0), (["--cacert", nginx.cert, url], 0), ([url], 60)] {
            let mine = try ferry(args, rig.daemon), theirs = try curl(args)
            #expect(mine.status == code && theirs.status == code, "\(args): ferry \(mine.status) \(mine.err), curl \(theirs.status)")
            if code == 0 { #expect(mine.out.utf8.count == 12) }
        }
        #expect(try rig.origin.count(path: "/r") >= 2 * 2, "each trusted request reached the origin: nothing was stored")
        let bad = try ferry(["--cacert", "/dev/null", url], rig.daemon)
        #expect(bad.status == 1 && bad.err.contains("ca_pem"), "\(bad)")
    }

    /// `--retry` as curl's: a 503 twice then a 200 is a success after two retries for both (the origin counts
    /// three requests each; curl also writes the 503s' bodies to stdout, ferry only the last try's); with one retry
    /// both end with the 503's body and exit 0 (22 with -f); a timeout is retried (exit 28 after 1 + N tries); a
    /// 404 is not; -o FILE holds the last try's body.
    @Test func retryAsCurlDoes() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let (origin, daemon) = (rig.origin, rig.daemon)
        func url(_ tag: String, _ extra: String = "") -> String { origin.url("/r?fail_first=2&body=done&t=\(tag)\(extra)") }
        let theirs = try curl(["--retry", "2", url("curl")])
        let mine = try ferry(["--retry", "2", "--retry-delay", "0.05", url("ferry")], daemon)
        #expect(theirs.status == 0 && theirs.out == "failingfailingdone" && mine.status == 0 && mine.out == "done", "\(theirs) \(mine)")
        #expect(try origin.countExact("/r?fail_first=2&body=done&t=curl") == 3)
        #expect(try origin.countExact("/r?fail_first=2&body=done&t=ferry") == 3)

        let shortCurl = try curl(["--retry", "1", "-w", "%{http_code}", url("curl-short")])
        let shortMine = try ferry(["--retry", "1", "--retry-delay", "0.05", "-w", "%{http_code}", url("ferry-short")], daemon)
        #expect(shortCurl.out == "failingfailing503" && shortMine.out == "failing503" && shortCurl.status == 0 && shortMine.status == 0,
                "\(shortCurl) \(shortMine)")
        let failing = try ferry(["-f", "--retry", "1", "--retry-delay", "0.05", url("ferry-f")], daemon)
        #expect(failing.status == 22 && failing.out.isEmpty)

        let loud = try runCommand(Binaries.ferry, ["fetch", "--retry", "3", "--retry-delay", "0.05", "-o", "/dev/null", url("warn")],
                                  environment: ["FERRY_SOCKET": daemon.socket])
        #expect(loud.err.components(separatedBy: "Warning: Problem : HTTP error. Will retry in 0.05 seconds.").count == 3, "\(loud.err)")
        #expect(loud.err.contains("3 retries left.") && loud.err.contains("2 retries left."))

        // Timed out before any byte of the body reached stdout (a try that wrote some is not repeated).
        let slow = origin.url("/r?delay_ms=2000&cc=no-store&t=retry")
        let timedOut = try ferry(["--retry", "2", "--retry-delay", "0.05", "-m", "0.3", slow], daemon)
        let slowCount = try origin.countExact("/r?delay_ms=2000&cc=no-store&t=retry")
        #expect(timedOut.status == 28 && slowCount == 3, "\(timedOut) \(slowCount)")
        #expect(try ferry(["--retry", "3", "--retry-delay", "0.05", origin.url("/r?status=404&t=retry")], daemon).status == 0)
        #expect(try origin.countExact("/r?status=404&t=retry") == 1, "a 404 is not transient")

        let dir = TempDir()
        defer { dir.remove() }
        let saved = try ferry(["--retry", "2", "--retry-delay", "0.05", "-o", dir.path + "/out", url("file")], daemon)
        let savedText = try String(contentsOfFile: dir.path + "/out", encoding: .utf8)
        #expect(saved.status == 0 && savedText == "done")
        #expect(try ferry(["--retry", "x", url("bad")], daemon).status == 2)
    }

    /// `-v` shows the request as curl's does (request line with the target curl sends: "/?x=1" for a URL with a
    /// query and no path, no fragment; Host with the port; Accept; the fields — in the daemon's wire order, which
    /// differs from curl's) and the response's head, line for line, then where the answer came from.
    @Test func verboseShowsWhatCurlShows() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let url = "http://127.0.0.1:\(rig.origin.port)?x=1#frag"
        let args = ["-v", "-o", "/dev/null", "-A", "ferry-test", "-H", "X-One: 1", url]
        func lines(_ err: String, _ mark: String) -> [String] {
            err.split(whereSeparator: \.isNewline).map(String.init).filter { $0.hasPrefix(mark) && !$0.hasPrefix(mark + " Date:") }
                .map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let mine = try ferry(args, rig.daemon).err, theirs = try curl(args).err
        #expect(lines(mine, ">").sorted() == lines(theirs, ">").sorted(), "\(mine)\n--- curl:\n\(theirs)")
        #expect(lines(mine, "<") == lines(theirs, "<"))
        #expect(lines(mine, ">").first == "> GET /?x=1 HTTP/1.1")
        #expect(mine.contains("* ferry cache: miss"))
    }

    /// `-o` onto something that is not a regular file — a FIFO here, `/dev/null` in every script — writes through
    /// it and leaves it what it was (a temporary file renamed onto it replaced /dev/null itself, as root).
    @Test func outputToAFifoOrDeviceWritesThroughIt() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let dir = TempDir()
        defer { dir.remove() }
        let fifo = dir.path + "/pipe"
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = Task.detached { try runCommand("/usr/bin/cat", [fifo]) }
        let fetched = try ferry(["-o", fifo, rig.origin.url("/r?body=through&cc=no-store")], rig.daemon)
        let read = try awaitValue(reader)
        #expect(fetched.status == 0 && read.out == "through", "\(fetched) \(read)")
        var st = stat()
        #expect(lstat(fifo, &st) == 0 && st.st_mode & S_IFMT == S_IFIFO, "still a FIFO")
        #expect(try ferry(["-o", "/dev/null", rig.origin.url("/r?body=x&cc=no-store")], rig.daemon).status == 0)
        #expect(stat("/dev/null", &st) == 0 && st.st_mode & S_IFMT == S_IFCHR, "/dev/null is still the device")
    }
}
}

/// The value of a detached task, waited for from synchronous test code.
func awaitValue<T: Sendable>(_ task: Task<T, any Error>) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        box.result = await task.result
        done.signal()
    }
    done.wait()
    return try box.result!.get()
}

final class ResultBox<T: Sendable>: @unchecked Sendable { var result: Result<T, any Error>? }
