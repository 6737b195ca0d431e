import Foundation
import Testing
import FerryClient

/// No client can poison the shared HTTP cache or smuggle a request past ferryd, and the limits a request sets
/// hold whoever stored the response: a real ferryd and the project's origin, counted at the origin.
extension IntegrationTests {
    @Suite struct FetchTrustTests {
        typealias Setup = FetchTests.Setup

        static func failure(_ body: () async throws -> Void) async -> FerryError? {
            do { try await body() } catch let e as FerryError { return e } catch { return nil }
            return nil
        }

        @Test func aClientsHostHeaderIsRefusedSoNobodyElseGetsItsAnswer() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let path = "/r?cc=max-age%3D600&body=genuine"
            let e = await Self.failure { _ = try await s.get(path, [HTTPHeader("Host", "evil.example")]) }
            #expect(e?.code == .invalidArgument && e?.message.contains("Host") == true, "\(String(describing: e))")
            #expect(try s.origin.countExact(path) == 0, "refused before the network")
            let plain = try await s.get(path)
            #expect(plain.text == "genuine" && plain.cacheStatus == .miss)
            let echo = try await s.get("/echo")
            let seen = try JSONSerialization.jsonObject(with: Data(echo.body)) as? [String: Any]
            let hosts = (seen?["headers"] as? [[String]])?.filter { $0.first?.lowercased() == "host" }.map { $0[1] }
            #expect(hosts == [URL(string: s.origin.url("/"))!.host! + ":" + String(URL(string: s.origin.url("/"))!.port!)],
                    "the origin sees the URL's host: \(String(describing: hosts))")
        }

        @Test func framingAndConnectionHeadersAreTheDaemonsSoNothingIsSmuggled() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let smuggled = Array("GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            for name in ["Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "TE", "Trailer", "Upgrade",
                         "Proxy-Authorization", "proxy-connection"] {
                var r = FetchRequest(s.origin.url("/echo"), method: "POST", headers: [HTTPHeader(name, "0")], body: smuggled)
                r.cache = .noStore
                let e = await Self.failure { _ = try await s.client.fetch(r) }
                #expect(e?.code == .invalidArgument && e?.message.contains(name) == true, "\(name): \(String(describing: e))")
            }
            #expect(try s.origin.count(path: "/echo") == 0 && s.origin.count(path: "/smuggled") == 0)
            var honest = FetchRequest(s.origin.url("/echo"), method: "POST", body: smuggled)
            honest.cache = .noStore
            let r = try await s.client.fetch(honest)
            #expect(r.status == 200 && r.text.contains("\"body_len\": \(smuggled.count)"), "the body is a body: \(r.text)")
            #expect(try s.origin.count(path: "/smuggled") == 0)
        }

        @Test func headerValuesFollowTheFieldValueGrammar() async throws {
            let s = try await Setup()
            defer { s.stop() }
            for bad in ["a\u{0B}b", "a\u{0C}b", "a\u{7F}b", "a\u{1B}[31m"] {
                let e = await Self.failure { _ = try await s.get("/echo", [HTTPHeader("X-Note", bad)]) }
                #expect(e?.code == .invalidArgument && e?.message.contains("control character") == true, "\(String(describing: e))")
            }
            let ok = try await s.get("/echo", [HTTPHeader("X-Note", "tab\tinside, café")], cache: .noStore)
            #expect(ok.status == 200 && ok.text.contains("tab\\tinside, caf"))
            #expect(try s.origin.count(path: "/echo") == 1)
        }

        @Test func maxBytesHoldsOnCacheHits() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let path = "/bytes?size=100000&cc=max-age%3D600"
            #expect(try await s.get(path).body.count == 100_000)
            var small = FetchRequest(s.origin.url(path))
            small.maxBytes = 1000
            let e = await Self.failure { _ = try await s.client.fetch(small) }
            #expect(e?.code == .resourceExhausted && e?.details?["max_bytes"] == .int(1000), "\(String(describing: e))")
            let again = try await s.get(path)
            #expect(again.cacheStatus == .hit && again.body.count == 100_000, "the stored response is untouched")
            #expect(try s.origin.countExact(path) == 1)
        }

        /// An origin that trickles its body holds a transfer slot only as long as the daemon's default limit when
        /// the request sets none; a request's own `timeout_ms` wins over it.
        @Test func aTrickleWithoutATimeoutEndsAtTheDefaultLimit() async throws {
            let s = try await Setup(daemonArgs: ["--fetch-timeout", "1s"])
            defer { s.stop() }
            let trickle = "/slow?size=400&chunks=4&interval_ms=700&cc=no-store"
            let e = await Self.failure { _ = try await s.get(trickle) }
            #expect(e?.code == .deadlineExceeded, "\(String(describing: e))")
            var patient = FetchRequest(s.origin.url(trickle + "&n=2"))
            patient.timeout = .seconds(20)
            let r = try await s.client.fetch(patient)
            #expect(r.status == 200 && r.body.count == 400)
        }

        @Test func anOversizedResponseHeaderIsNamedAsSuch() async throws {
            let s = try await Setup()
            defer { s.stop() }
            for query in ["bytes=2000000", "bytes=400000&lines=40"] {
                let e = await Self.failure { _ = try await s.get("/bigheader?" + query, cache: .noStore) }
                #expect(e?.code == .resourceExhausted && e?.details?["max_header_bytes"] == .int(262_144),
                        "\(query): \(String(describing: e))")
            }
            let fine = try await s.get("/bigheader?bytes=60000&lines=2", cache: .noStore)
            #expect(fine.status == 200 && fine.text == "ok")
        }
    }
}
