import Foundation
import Testing
import FerryClient
#if canImport(Glibc)
import Glibc
#endif

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

        /// 70 fetches of one client to 70 black holes (ports that accept and never answer) held every transfer slot,
        /// and a healthy fetch with `timeout_ms: 5000` waited in libcurl's queue until it failed. Now the client holds
        /// half the slots, the healthy fetch starts at once, and one that must wait fails when its time is up.
        @Test func oneClientCannotTakeEveryTransferSlot() async throws {
            let s = try await Setup(daemonArgs: ["--fetch-total", "8"])
            defer { s.stop() }
            let holes = try (0..<10).map { _ in try BlackHole() }
            defer { for h in holes { h.close() } }
            let hog = try await FerryClient.connect(path: s.daemon.socket)
            defer { hog.close() }
            let hogging = Task {
                await withTaskGroup(of: Void.self) { group in
                    for h in holes { group.addTask { _ = try? await hog.fetch(FetchRequest("http://127.0.0.1:\(h.port)/")) } }
                }
            }
            defer { hogging.cancel() }
            var waited = 0
            while (try await s.client.stats()["fetch"]?["transfers_waiting"]?.intValue ?? 0) < 6 && waited < 500 {
                try await Task.sleep(for: .milliseconds(10))
                waited += 1
            }
            let stats = try await s.client.stats()
            #expect(stats["fetch"]?["transfers_active"] == 4 && stats["fetch"]?["transfers_waiting"] == 6, "\(stats)")
            var healthy = FetchRequest(s.origin.url("/r?body=fine&cc=no-store"))
            healthy.timeout = .seconds(5)
            let r = try await s.client.fetch(healthy)
            #expect(r.status == 200 && r.text == "fine")

            // Three more clients take the other half; a fourth waits, and its 300 ms run out in the queue.
            let others = try await (0..<3).asyncMap { _ in try await FerryClient.connect(path: s.daemon.socket) }
            defer { for c in others { c.close() } }
            let busy = Task {
                await withTaskGroup(of: Void.self) { group in
                    for (c, h) in zip(others, holes) { group.addTask { _ = try? await c.fetch(FetchRequest("http://127.0.0.1:\(h.port)/x")) } }
                    group.addTask { _ = try? await s.client.fetch(FetchRequest("http://127.0.0.1:\(holes[9].port)/y")) }
                }
            }
            defer { busy.cancel() }
            waited = 0
            while (try await s.client.stats()["fetch"]?["transfers_active"]?.intValue ?? 0) < 8 && waited < 500 {
                try await Task.sleep(for: .milliseconds(10))
                waited += 1
            }
            let late = try await FerryClient.connect(path: s.daemon.socket)
            defer { late.close() }
            var hurried = FetchRequest(s.origin.url("/r?body=late&cc=no-store"))
            hurried.timeout = .milliseconds(300)
            let e = await Self.failure { _ = try await late.fetch(hurried) }
            #expect(e?.code == .deadlineExceeded, "\(String(describing: e))")
            #expect(try s.origin.count(path: "/r") == 1, "the late request never reached the origin")
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

/// A TCP port on 127.0.0.1 that accepts connections (in the kernel's backlog) and never answers: a request to it
/// holds its transfer until a limit ends it.
final class BlackHole: @unchecked Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 64) == 0 else {
            Glibc.close(fd)
            throw HarnessError("black hole: \(String(cString: strerror(errno)))")
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    func close() { Glibc.close(fd) }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
