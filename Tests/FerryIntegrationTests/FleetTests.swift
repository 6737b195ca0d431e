import Foundation
import Testing
import FerryClient

/// Several ferryd sharing a Redis (`--l2`), as machines of a fleet: what one fetched is a Redis hit on another (the
/// origin asked once), with the time to live its freshness gives; credentialed responses never reach Redis; Redis
/// gone changes nothing a client sees.
extension IntegrationTests {
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server")))
struct FleetTests {
    /// A redis-server on a Unix socket, stopped by PID.
    final class Redis {
        let dir = TempDir()
        let socket: String
        private let process: Subprocess

        init() throws {
            socket = dir.path + "/redis.sock"
            process = try Subprocess("/usr/bin/redis-server", ["--port", "0", "--unixsocket", socket, "--save", "", "--appendonly", "no",
                                                               "--dir", dir.path], stdout: dir.path + "/redis.log")
            try waitForPath(socket)
        }

        func cli(_ args: [String]) throws -> String {
            try runCommand("/usr/bin/redis-cli", ["-s", socket] + args).out
        }

        func stop() { process.stop(signal: SIGKILL) }
        deinit {
            stop()
            dir.remove()
        }
    }

    @Test func aFetchOnOneMachineIsARedisHitOnAnother() async throws {
        let redis = try Redis()
        let origin = try OriginServer()
        defer { origin.stop() }
        let l2 = ["--l2", "redis+unix://\(redis.socket)"]
        let a = try Daemon(l2), b = try Daemon(l2)
        defer { a.stop(); b.stop() }
        let ca = try await FerryClient.connect(path: a.socket), cb = try await FerryClient.connect(path: b.socket)
        defer { ca.close(); cb.close() }
        for _ in 0..<100 where !(try await ca.stats()["l2"]?["connected"]?.boolValue ?? false) { try await Task.sleep(for: .milliseconds(10)) }

        let url = origin.url("/r?body=shared&cc=max-age%3D60")
        #expect(try await ca.fetch(FetchRequest(url)).cacheStatus == .miss)
        var onB: FetchResponse?
        for _ in 0..<50 {   // A writes to Redis behind its reply
            try await Task.sleep(for: .milliseconds(20))
            if !(try redis.cli(["--scan"]).isEmpty) { break }
        }
        onB = try await cb.fetch(FetchRequest(url))
        #expect(onB?.cacheStatus == .hit && onB?.body == Array("shared".utf8))
        #expect(try origin.countExact("/r?body=shared&cc=max-age%3D60") == 1, "the origin was asked once by the fleet")
        #expect(try await cb.stats()["l2"]?["hits"]?.intValue == 1)
        let key = try redis.cli(["--scan"]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key == "ferry:v1:GET \(url)")
        let ttl = Int(try redis.cli(["PTTL", key]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect((58_000...60_000).contains(ttl), "the time to live is its freshness: \(ttl)")

        // A credentialed response stays on its machine.
        let personal = origin.url("/r?body=mine&cc=max-age%3D60&h=Vary:Authorization")
        _ = try await ca.fetch(FetchRequest(personal, headers: [HTTPHeader("Authorization", "Bearer secret")]))
        try await Task.sleep(for: .milliseconds(100))
        let keys = try redis.cli(["--scan"])
        #expect(!keys.contains("partition") && !keys.contains("body=mine"), "\(keys)")

        // Redis gone: answers as before, from the origin and the local tiers, no error.
        redis.stop()
        let fresh = origin.url("/r?body=after&cc=max-age%3D60")
        #expect(try await cb.fetch(FetchRequest(fresh)).status == 200)
        #expect(try await cb.fetch(FetchRequest(fresh)).cacheStatus == .hit)
        #expect(try await cb.fetch(FetchRequest(url)).cacheStatus == .hit, "what B keeps locally it still serves")
        for _ in 0..<100 where try await cb.stats()["l2"]?["connected"]?.boolValue ?? true { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try await cb.stats()["l2"]?["connected"]?.boolValue == false)
    }
}
}
