import Testing
import FerryFetch
import FerryImages
import FerryProtocol
@testable import FerryServer

/// The `fetch` and `image.get` arguments as specs: defaults, normalisation, and the precise refusal of each bad one.
@Suite struct FetchArgumentsTests {
    static func parse(_ args: JSONObject, body: [UInt8] = []) -> Result<FetchSpec, FetchFailure> {
        FetchArguments.parse(args, body: body, maxBytesLimit: 1 << 30)
    }

    static func problem(_ args: JSONObject, body: [UInt8] = []) -> String? {
        guard case .failure(.invalidArgument(let m)) = parse(args, body: body) else { return nil }
        return m
    }

    @Test func defaults() throws {
        let spec = try Self.parse(["url": "https://a.test/x"]).get()
        #expect(spec.method == "GET" && spec.headers.isEmpty && spec.redirect == .follow && spec.maxRedirects == 10)
        #expect(spec.maxBytes == 1 << 30 && spec.cacheMode == .default && !spec.progress && spec.timeoutMs == nil)
        let capped = try FetchArguments.parse(["url": "https://a.test/x"], body: [], maxBytesLimit: 1000).get()
        #expect(capped.maxBytes == 1000, "the daemon's limit is the default")
    }

    @Test func everyArgument() throws {
        let spec = try Self.parse(["url": "https://a.test/x", "method": "post", "headers": [["Accept", "  text/a\t"]],
                                   "timeout_ms": 5, "redirect": "manual", "max_redirects": 0, "max_bytes": 7,
                                   "cache": "no-cache", "progress": true], body: [1]).get()
        #expect(spec.method == "POST", "common methods in any case, as curl")
        #expect(spec.headers.count == 1 && spec.headers[0] == ("Accept", "text/a"), "values trimmed of OWS")
        #expect(spec.timeoutMs == 5 && spec.redirect == .manual && spec.maxRedirects == 0 && spec.maxBytes == 7)
        #expect(spec.cacheMode == .noCache && spec.progress && spec.body == [1])
        #expect(spec.mayReplay == false, "a POST is not replayed unless asked")
        let retried = try Self.parse(["url": "https://a.test/x", "method": "PUT", "retry": true], body: [1]).get()
        #expect(retried.retry && retried.mayReplay)
        let keyed = try Self.parse(["url": "https://a.test/x", "method": "POST", "headers": [["Idempotency-Key", "k"]]], body: [1]).get()
        #expect(keyed.mayReplay)
        #expect(try Self.parse(["url": "https://a.test/x", "method": "PROPFIND"]).get().method == "PROPFIND")
        #expect(try Self.parse(["url": "https://a.test/x", "cache": .null, "timeout_ms": .null]).get().cacheMode == .default,
                "null is absent")
    }

    @Test func refusals() {
        #expect(Self.problem([:]) == "\"url\" is required")
        #expect(Self.problem(["url": 1]) == "\"url\" must be a string")
        #expect(Self.problem(["url": "ftp://a.test/x"])?.contains("only http and https") == true)
        #expect(Self.problem(["url": "http://u:p@a.test/"])?.contains("credentials") == true)
        #expect(Self.problem(["url": "http://a.test/a b"])?.contains("spaces") == true)
        #expect(Self.problem(["url": "https://a.test/x", "method": "GE T"])?.contains("method") == true)
        #expect(Self.problem(["url": "https://a.test/x", "headers": [["Bad Name", "v"]]])?.contains("not a valid field name") == true)
        #expect(Self.problem(["url": "https://a.test/x", "headers": [["X", "a\r\nInjected: 1"]]])?.contains("CR, LF or NUL") == true)
        #expect(Self.problem(["url": "https://a.test/x", "headers": ["X"]]) == "each header must be a [name, value] pair of strings")
        #expect(Self.problem(["url": "https://a.test/x"], body: [1]) == "a GET request cannot have a body")
        #expect(Self.problem(["url": "https://a.test/x", "timeout_ms": 0]) == "\"timeout_ms\" must be an integer from 1 to 86400000")
        #expect(Self.problem(["url": "https://a.test/x", "redirect": "sometimes"]) == "\"redirect\" must be follow, manual or error")
        #expect(Self.problem(["url": "https://a.test/x", "cache": "maybe"])?.hasPrefix("\"cache\" must be default") == true)
        #expect(Self.problem(["url": "https://a.test/x", "progress": 1]) == "\"progress\" must be a boolean")
        #expect(Self.problem(["url": "https://a.test/x", "retry": "yes"]) == "\"retry\" must be a boolean")
        let big = String(repeating: "v", count: FetchSpec.maxHeaderBytes)
        #expect(Self.problem(["url": "https://a.test/x", "headers": [["X", .string(big)]]])?.contains("larger than") == true)
    }

    @Test func theDaemonOwnsFramingAndRoutingHeaders() {
        for name in ["Host", "host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "TE", "Trailer",
                     "Upgrade", "Proxy-Authorization", "Proxy-Connection"] {
            #expect(Self.problem(["url": "https://a.test/x", "headers": [[.string(name), "v"]]])?.contains(name) == true, "\(name)")
        }
        for name in ["Authorization", "X-Api-Version", "Accept", "Cookie", "Expect", "Hostname", "Proxied"] {
            #expect(Self.problem(["url": "https://a.test/x", "headers": [[.string(name), "v"]]]) == nil, "\(name) is the client's")
        }
    }

    @Test func valuesAreFieldValues() {
        #expect(FetchArguments.valueProblem(name: "X", value: "tab\tand space, UTF-8 é") == nil)
        #expect(FetchArguments.valueProblem(name: "X", value: "a\u{0B}b")?.contains("0x0B") == true)
        #expect(FetchArguments.valueProblem(name: "X", value: "a\u{7F}")?.contains("0x7F") == true)
        #expect(FetchArguments.valueProblem(name: "X", value: "a\u{01}")?.contains("0x01") == true)
        #expect(FetchArguments.valueProblem(name: "X", value: "a\rb") == "the value of header X contains CR, LF or NUL")
    }

    @Test func imageGetSharesTheChecksAndTheirOrder() {
        for args: JSONObject in [[:], ["url": "ftp://x"], ["url": "https://a.test/i.png", "headers": [["Bad Name", "v"]]],
                                 ["url": "https://a.test/i.png", "cache": "maybe", "timeout_ms": 0]] {
            guard case .failure(let image) = ImageArguments.request(args), case .failure(let fetch) = Self.parse(args) else {
                Issue.record("both refuse \(args)")
                continue
            }
            #expect(image == fetch)
        }
        guard case .success(let r) = ImageArguments.request(["url": "https://a.test/i.png", "cache": "reload", "timeout_ms": 9]) else {
            Issue.record("a good image request")
            return
        }
        #expect(r.cache == .reload && r.timeoutMs == 9 && r.url == "https://a.test/i.png")
    }
}

/// The protocol codes of the engines' typed failures, at the operation edge.
@Suite struct WireErrorMappingTests {
    @Test func fetchFailures() {
        #expect(FetchFailure.invalidArgument("x").wireError.code == .invalidArgument)
        let down = FetchFailure.unavailable(curlCode: 7, message: "refused").wireError
        #expect(down.code == .unavailable && down.details?["curl_code"] == .int(7))
        #expect(FetchFailure.timeout("t").wireError.code == .deadlineExceeded)
        #expect(FetchFailure.tooLarge(limit: 9).wireError.details?["max_bytes"] == .int(9))
        #expect(FetchFailure.redirect("r").wireError.code == .failedPrecondition)
        #expect(FetchFailure.internalError("i").wireError.code == .internal)
    }

    @Test func imageErrors() {
        #expect(ImageError.invalidImage(.notAnImage("html")).wireError.code == .invalidImage)
        #expect(ImageError.invalidImage(.tooLarge(width: 10, height: 10, limit: 5)).wireError.details?["max_pixels"] == .int(5))
        #expect(ImageError.httpStatus(404, url: "u").wireError.code == .notFound)
        #expect(ImageError.httpStatus(410, url: "u").wireError.code == .notFound)
        #expect(ImageError.httpStatus(500, url: "u").wireError.code == .unavailable)
        #expect(ImageError.fetch(WireError(.deadlineExceeded, "t")).wireError.code == .deadlineExceeded)
        #expect(ImageError.cancelled.wireError.code == .cancelled)
    }
}
