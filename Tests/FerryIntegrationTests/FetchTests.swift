import Foundation
import Testing
import FerryClient
#if canImport(Glibc)
import Glibc
#endif

/// `fetch` against a real ferryd and the project's own origin: every cache rule is checked against the origin's
/// request counter.
extension IntegrationTests {
    @Suite struct FetchTests {
        /// A daemon and an origin for one test, both stopped by PID at the end.
        final class Setup: @unchecked Sendable {
            let origin: OriginServer
            let daemon: Daemon
            let client: FerryClient
            init(daemonArgs: [String] = [], origin: OriginServer? = nil) async throws {
                self.origin = try origin ?? OriginServer()
                daemon = try Daemon(daemonArgs)
                client = try await FerryClient.connect(path: daemon.socket)
            }
            func get(_ path: String, _ headers: [HTTPHeader] = [], cache: FetchRequest.CacheMode? = nil) async throws -> FetchResponse {
                var r = FetchRequest(origin.url(path), headers: headers)
                r.cache = cache
                return try await client.fetch(r)
            }
            func stop() {
                client.close()
                daemon.stop()
                origin.stop()
            }
        }

        static func code(of body: () async throws -> Void) async -> String? {
            do { try await body() } catch let e as FerryError { return e.codeName } catch { return "\(error)" }
            return nil
        }

        @Test func aCacheableResponseIsServedFromTheCacheAndTheOriginSeesOneRequest() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let first = try await s.get("/r?cc=max-age%3D60&body=hello")
            #expect(first.status == 200 && first.text == "hello" && first.cacheStatus == .miss)
            let second = try await s.get("/r?cc=max-age%3D60&body=hello")
            #expect(second.text == "hello" && second.cacheStatus == .hit)
            #expect(second.header("age") != nil, "served from the cache with an Age header")
            #expect(try s.origin.count(path: "/r") == 1)
            // An uncacheable response (no freshness, random body) goes to the origin every time.
            let a = try await s.get("/r?random=1"), b = try await s.get("/r?random=1")
            #expect(a.text != b.text && b.cacheStatus == .miss)
            // no-store is never kept, even with max-age.
            _ = try await s.get("/r?cc=no-store&cc=max-age%3D60&body=x")
            #expect(try await s.get("/r?cc=no-store&cc=max-age%3D60&body=x").cacheStatus == .miss)
            #expect(try s.origin.count(path: "/r") == 5)
        }

        @Test func staleResponsesAreRevalidatedWithTheirValidators() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let path = "/r?cc=max-age%3D0&etag=%22v1%22&body=versioned"
            #expect(try await s.get(path).cacheStatus == .miss)
            let again = try await s.get(path)
            #expect(again.cacheStatus == .revalidated && again.status == 200 && again.text == "versioned")
            #expect(try s.origin.count(path: "/r") == 2, "the second request was a conditional one answered by a 304")
            // cache modes: no-store and reload skip the cache; force-cache and only-if-cached take it as it is.
            #expect(try await s.get(path, cache: .forceCache).cacheStatus == .hit)
            #expect(try await s.get(path, cache: .noStore).cacheStatus == .bypass)
            #expect(try await s.get("/r?body=never-seen", cache: .onlyIfCached).status == 504)
            #expect(try s.origin.count(path: "/r") == 3)
        }

        @Test func staleWhileRevalidateServesStaleAndRevalidatesOnceInTheBackground() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let path = "/r?cc=max-age%3D1%2Cstale-while-revalidate%3D60&etag=%22e1%22&body=swr"
            #expect(try await s.get(path).cacheStatus == .miss)
            try await Task.sleep(for: .milliseconds(2100))  // ages are whole seconds: now surely stale
            let stale = try await s.get(path)
            #expect(stale.cacheStatus == .stale && stale.text == "swr")
            // Served at once; the origin hears about it in the background, once.
            var count = 0
            for _ in 0..<50 where count < 2 {
                try await Task.sleep(for: .milliseconds(20))
                count = try s.origin.count(path: "/r")
            }
            #expect(count == 2)
            // The background 304 refreshed the stored response: its age starts again (whole seconds, so 0 or 1,
            // where the response served stale was at least 2 seconds old).
            #expect(stale.age >= 2)
            let refreshed = try await s.get(path)
            #expect(refreshed.age <= 1 && refreshed.text == "swr", "age \(refreshed.age), \(refreshed.cacheStatus)")
        }

        @Test func staleIfErrorServesTheStoredResponseWhenTheOriginIsGone() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let url = s.origin.url("/r?cc=max-age%3D1%2Cstale-if-error%3D600&body=kept")
            #expect(try await s.client.fetch(FetchRequest(url)).cacheStatus == .miss)
            s.origin.stop()
            try await Task.sleep(for: .milliseconds(2100))
            let r = try await s.client.fetch(FetchRequest(url))
            #expect(r.cacheStatus == .stale && r.text == "kept" && r.status == 200)
            // Without stale-if-error (and past its freshness) the failure is the answer.
            #expect(await Self.code { _ = try await s.client.fetch(FetchRequest(s.origin.url("/r?body=never-stored"))) } == "unavailable")
        }

        @Test func concurrentRevalidationsShareOneConditionalRequest() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let url = s.origin.url("/r?cc=max-age%3D0&etag=%22v%22&delay_ms=400&body=validated")
            #expect(try await s.client.fetch(FetchRequest(url)).cacheStatus == .miss)
            let socket = s.daemon.socket
            let statuses = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        let c = try await FerryClient.connect(path: socket)
                        defer { c.close() }
                        let r = try await c.fetch(FetchRequest(url))
                        #expect(r.status == 200 && r.text == "validated")
                        return r.cacheStatus?.rawValue ?? ""
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == "revalidated" }, "\(statuses)")
            #expect(try s.origin.count(path: "/r") == 2, "one conditional request for the ten")
        }

        @Test func requestDirectivesAndResponseRulesAgainstTheOriginsCounter() async throws {
            let s = try await Setup()
            defer { s.stop() }
            func enc(_ v: String) -> String { v.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? v }
            func httpDate(_ secondsFromNow: Double) -> String {
                let f = DateFormatter()
                f.locale = Locale(identifier: "en_US_POSIX")
                f.timeZone = TimeZone(identifier: "GMT")
                f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
                return f.string(from: Date().addingTimeInterval(secondsFromNow))
            }
            /// Two fetches of a fresh URL (the second with `second` headers): the second's cache status and the
            /// origin's count for that URL.
            var n = 0
            func twice(_ query: String, second: [HTTPHeader] = [], method: String = "GET") async throws -> (String, Int) {
                n += 1
                let path = "/r?\(query)&t=\(n)"
                _ = try await s.get(path)
                var r = FetchRequest(s.origin.url(path), method: method, headers: second)
                r.cache = nil
                let status = try await s.client.fetch(r).cacheStatus?.rawValue ?? ""
                return (status, try s.origin.countExact(path))
            }
            let etag = "cc=max-age%3D600&etag=%22v%22"
            #expect(try await twice(etag, second: [HTTPHeader("Cache-Control", "no-cache")]) == ("revalidated", 2))
            #expect(try await twice(etag, second: [HTTPHeader("Pragma", "no-cache")]) == ("revalidated", 2))
            #expect(try await twice(etag, second: [HTTPHeader("Cache-Control", "max-age=0")]) == ("revalidated", 2))
            #expect(try await twice(etag, second: [HTTPHeader("Cache-Control", "max-stale=60")]) == ("hit", 1))
            #expect(try await twice("cc=private%2Cmax-age%3D600") == ("miss", 2), "private: never in a shared cache")
            #expect(try await twice("expires=" + enc(httpDate(3600))) == ("hit", 1), "Expires in the future")
            #expect(try await twice("expires=0") == ("miss", 2), "an invalid Expires means already stale")
            #expect(try await twice("lm=" + enc(httpDate(-10 * 86400))) == ("hit", 1), "heuristic: 10% of the Last-Modified age")
            #expect(try await twice("cc=max-age%3D600&vary=%2A") == ("miss", 2), "Vary: * is never served from the cache")
            #expect(try await twice("cc=max-age%3D600", method: "HEAD") == ("hit", 1), "HEAD is answered from a stored GET")
            let unseen = try await s.client.fetch(FetchRequest(s.origin.url("/r?never=1"),
                                                              headers: [HTTPHeader("Cache-Control", "only-if-cached")]))
            #expect(unseen.status == 504)
            // A POST whose response names another URL of the origin in Location invalidates that one too.
            _ = try await s.get("/r?cc=max-age%3D600&body=target")
            #expect(try await s.get("/r?cc=max-age%3D600&body=target").cacheStatus == .hit)
            var post = FetchRequest(s.origin.url("/echo?status=201&location=" + enc("/r?cc=max-age%3D600&body=target")), method: "POST", body: [1])
            post.cache = .noStore
            #expect(try await s.client.fetch(post).status == 201)
            #expect(try await s.get("/r?cc=max-age%3D600&body=target").cacheStatus == .miss)
        }

        @Test func variantsFollowVary() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let path = "/r?cc=max-age%3D60&vary=Accept&body=v"
            #expect(try await s.get(path, [HTTPHeader("Accept", "text/a")]).cacheStatus == .miss)
            #expect(try await s.get(path, [HTTPHeader("Accept", "text/b")]).cacheStatus == .miss)
            #expect(try await s.get(path, [HTTPHeader("Accept", "text/a")]).cacheStatus == .hit)
            #expect(try await s.get(path, [HTTPHeader("Accept", "text/b")]).cacheStatus == .hit)
            #expect(try await s.get(path).cacheStatus == .miss, "no Accept is a variant of its own")
            #expect(try s.origin.count(path: "/r") == 3)
        }

        @Test func authorizedRequestsAreSharedOnlyWhereTheResponseAllows() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let auth = [HTTPHeader("Authorization", "Bearer secret")]
            _ = try await s.get("/r?cc=max-age%3D60&body=private", auth)
            #expect(try await s.get("/r?cc=max-age%3D60&body=private", auth).cacheStatus == .hit, "kept for that token")
            #expect(try await s.get("/r?cc=max-age%3D60&body=private").cacheStatus == .miss, "and only for it")
            _ = try await s.get("/r?cc=public%2Cmax-age%3D60&body=public", auth)
            #expect(try await s.get("/r?cc=public%2Cmax-age%3D60&body=public").cacheStatus == .hit, "public: shared")
            #expect(try s.origin.count(path: "/r") == 3)
        }

        @Test func aSuccessfulUnsafeMethodInvalidatesTheURL() async throws {
            let s = try await Setup()
            defer { s.stop() }
            _ = try await s.get("/echo?cc=max-age%3D60")
            #expect(try await s.get("/echo?cc=max-age%3D60").cacheStatus == .hit)
            var post = FetchRequest(s.origin.url("/echo?cc=max-age%3D60"), method: "POST",
                                    headers: [HTTPHeader("X-Trace", "a"), HTTPHeader("X-Trace", "b"), HTTPHeader("Content-Type", "application/octet-stream")],
                                    body: [0, 1, 2, 255, 254])
            post.cache = .noStore
            let echoed = try await s.client.fetch(post)
            let json = try JSONSerialization.jsonObject(with: Data(echoed.body)) as? [String: Any]
            #expect(json?["method"] as? String == "POST")
            #expect(json?["body_len"] as? Int == 5)
            let headers = (json?["headers"] as? [[String]]) ?? []
            #expect(headers.filter { $0[0] == "X-Trace" }.map { $0[1] } == ["a", "b"], "duplicates and order pass through")
            #expect(try await s.get("/echo?cc=max-age%3D60").cacheStatus == .miss, "the POST invalidated the stored GET")
        }

        @Test func anInvalidationMakesEveryStoredVariantUnreachable() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let path = "/echo?cc=max-age%3D600&vary=Accept-Language"
            let en = [HTTPHeader("Accept-Language", "en")], fr = [HTTPHeader("Accept-Language", "fr")]
            _ = try await s.get(path, en)
            _ = try await s.get(path, fr)
            #expect(try await s.get(path, fr).cacheStatus == .hit)
            var post = FetchRequest(s.origin.url(path), method: "POST", body: [1])
            post.cache = .noStore
            _ = try await s.client.fetch(post)
            #expect(try await s.get(path, en).cacheStatus == .miss, "the POST invalidated the URL")
            #expect(try await s.get(path, fr).cacheStatus == .miss, "the other variant did not come back with the new marker")
        }

        @Test func redirectsAreFollowedUpToTheLimit() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let r = try await s.get("/redirect/3")
            #expect(r.status == 200 && r.redirects == 3 && r.url == s.origin.url("/r"))
            var limited = FetchRequest(s.origin.url("/redirect/3"))
            limited.maxRedirects = 1
            #expect(await Self.code { _ = try await s.client.fetch(limited) } == "failed_precondition")
            var manual = FetchRequest(s.origin.url("/redirect/3"))
            manual.redirect = .manual
            let hop = try await s.client.fetch(manual)
            #expect(hop.status == 302 && hop.header("location") != nil)
            manual.redirect = .error
            #expect(await Self.code { _ = try await s.client.fetch(manual) } == "failed_precondition")
            #expect(await Self.code { _ = try await s.get("/redirect-loop") } == "failed_precondition")
        }

        @Test func limitsTimeoutsAndUnreachableOrigins() async throws {
            let s = try await Setup()
            defer { s.stop() }
            var big = FetchRequest(s.origin.url("/bytes?size=100000&cc=max-age%3D60"))
            big.maxBytes = 1000
            #expect(await Self.code { _ = try await s.client.fetch(big) } == "resource_exhausted")
            #expect(try await s.get("/bytes?size=100000&cc=max-age%3D60").cacheStatus == .miss, "nothing was cached")
            var slow = FetchRequest(s.origin.url("/r?delay_ms=3000"))
            slow.timeout = .milliseconds(300)
            #expect(await Self.code { _ = try await s.client.fetch(slow) } == "deadline_exceeded")
            do {
                _ = try await s.client.fetch(FetchRequest("http://127.0.0.1:1/"))
                Issue.record("a closed port answered")
            } catch let e as FerryError {
                #expect(e.code == .unavailable && e.details?["curl_code"]?.intValue == 7)
            }
            for bad in ["file:///etc/passwd", "ftp://127.0.0.1/", "gopher://127.0.0.1/", "http://", "http:///x",
                        "http://a b/", "http://127.0.0.1/" + String(repeating: "x", count: 9000), "127.0.0.1/x"] {
                #expect(await Self.code { _ = try await s.client.fetch(FetchRequest(bad)) } == "invalid_argument", "\(bad.prefix(40))")
            }
            #expect(await Self.code { _ = try await s.client.fetch(FetchRequest(s.origin.url("/r"), headers: [HTTPHeader("Bad Name", "x")])) }
                    == "invalid_argument")
            // An HTTP error status is a result.
            #expect(try await s.get("/r?status=503").status == 503)
        }

        @Test func largeAndCompressedBodiesArriveWhole() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let big = try await s.get("/bytes?size=10000000&cc=max-age%3D60")
            #expect(big.body.count == 10_000_000)
            #expect(big.body.enumerated().allSatisfy { $0.element == UInt8($0.offset % 251) })
            let cached = try await s.get("/bytes?size=10000000&cc=max-age%3D60")
            #expect(cached.cacheStatus == .hit && cached.body == big.body)
            let gz = try await s.get("/gzip?size=5000")
            #expect(gz.body.count == 5000 && gz.body.enumerated().allSatisfy { $0.element == UInt8($0.offset % 251) })
            #expect(gz.header("content-encoding") == nil, "the body is handed over decoded")
        }

        @Test func concurrentIdenticalRequestsReachTheOriginOnce() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let socket = s.daemon.socket
            func storm(_ path: String, clients: Int) async throws -> [String] {
                let url = s.origin.url(path)
                return try await withThrowingTaskGroup(of: String.self) { group in
                    for _ in 0..<clients {
                        group.addTask {
                            let c = try await FerryClient.connect(path: socket)
                            defer { c.close() }
                            let r = try await c.fetch(FetchRequest(url))
                            #expect(r.body.count == 2000)
                            return r.cacheStatus?.rawValue ?? ""
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            let shared = try await storm("/slow?size=2000&chunks=2&interval_ms=400&cc=max-age%3D60", clients: 50)
            #expect(try s.origin.count(path: "/slow") == 1)
            #expect(shared.filter { $0 == "miss" }.count == 1 && shared.filter { $0 == "coalesced" }.count >= 1)
            let unshared = try await storm("/slow?size=2000&chunks=2&interval_ms=50&cc=no-store", clients: 50)
            #expect(try s.origin.count(path: "/slow") == 51, "a no-store response is never handed to other waiters")
            #expect(!unshared.contains("coalesced"))
        }

        @Test func cancellingOneWaiterLeavesTheOtherAndCancellingAllStopsTheTransfer() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let url = s.origin.url("/slow?size=3000&chunks=3&interval_ms=500&cc=max-age%3D60")
            let other = try await FerryClient.connect(path: s.daemon.socket)
            defer { other.close() }
            let leaving = Task { try await s.client.fetch(FetchRequest(url)) }
            try await Task.sleep(for: .milliseconds(200))
            let staying = Task { try await other.fetch(FetchRequest(url)) }
            try await Task.sleep(for: .milliseconds(200))
            leaving.cancel()
            let got = try await staying.value
            #expect(got.body.count == 3000)
            #expect(try s.origin.count(path: "/slow") == 1)
            // Everyone goes: the daemon drops the transfer.
            let lone = Task { try await other.fetch(FetchRequest(s.origin.url("/slow?size=3000&chunks=3&interval_ms=700"))) }
            try await Task.sleep(for: .milliseconds(300))
            lone.cancel()
            _ = try? await lone.value
            try await Task.sleep(for: .milliseconds(200))
            let fetchStats = try await other.stats()["fetch"]?.objectValue
            #expect(fetchStats?["transfers_active"]?.intValue == 0)
        }

        @Test func cachedResponsesSurviveARestart() async throws {
            let origin = try OriginServer()
            defer { origin.stop() }
            let cacheDir = TempDir()
            defer { cacheDir.remove() }
            let url = origin.url("/r?cc=max-age%3D600&body=persistent")
            do {
                let d = try Daemon(["--cache-dir", cacheDir.path])
                let c = try await FerryClient.connect(path: d.socket)
                #expect(try await c.fetch(FetchRequest(url)).cacheStatus == .miss)
                c.close()
                d.stop()
            }
            let d = try Daemon(["--cache-dir", cacheDir.path])
            defer { d.stop() }
            let c = try await FerryClient.connect(path: d.socket)
            defer { c.close() }
            let r = try await c.fetch(FetchRequest(url))
            #expect(r.cacheStatus == .hit && r.text == "persistent")
            #expect(try origin.count(path: "/r") == 1)
        }

        @Test func httpsWithACertificateMadeForTheTest() async throws {
            let dir = TempDir()
            defer { dir.remove() }
            let cert = dir.path + "/cert.pem", key = dir.path + "/key.pem"
            let (status, _, err) = try runCommand("/usr/bin/env", ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
            try #require(status == 0, "openssl: \(err)")
            let origin = try OriginServer(tls: (cert, key))
            let trusted = try await Setup(daemonArgs: ["--ca-file", cert], origin: origin)
            defer { trusted.stop() }
            let r = try await trusted.get("/r?body=secure")
            #expect(r.status == 200 && r.text == "secure" && r.url.hasPrefix("https://"))
            let untrusting = try Daemon()
            defer { untrusting.stop() }
            let c = try await FerryClient.connect(path: untrusting.socket)
            defer { c.close() }
            #expect(await Self.code { _ = try await c.fetch(FetchRequest(origin.url("/r"))) } == "unavailable",
                    "a certificate no trusted CA signed is refused")
        }
    }
}
