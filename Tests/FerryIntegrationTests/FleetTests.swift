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
        private var process: Subprocess

        init() throws {
            socket = dir.path + "/redis.sock"
            process = try Redis.start(socket, dir.path)
        }

        private static func start(_ socket: String, _ dir: String) throws -> Subprocess {
            let process = try Subprocess("/usr/bin/redis-server", ["--port", "0", "--unixsocket", socket, "--save", "", "--appendonly", "no",
                                                                   "--dir", dir], stdout: dir + "/redis.log")
            try waitForPath(socket)
            return process
        }

        /// A new, empty redis-server on the same socket (the old one killed).
        func restart() throws {
            stop()
            try? FileManager.default.removeItem(atPath: socket)
            process = try Redis.start(socket, dir.path)
        }

        /// SIGSTOP / SIGCONT: alive, but answering nothing meanwhile (a Redis stuck in a long command).
        func pause(_ paused: Bool) { kill(process.pid, paused ? SIGSTOP : SIGCONT) }

        func cli(_ args: [String]) throws -> String {
            try runCommand("/usr/bin/redis-cli", ["-s", socket] + args).out
        }

        func stop() { process.stop(signal: SIGKILL) }
        deinit {
            stop()
            dir.remove()
        }
    }

    /// A Redis, the origin, daemons ("machines", two unless asked) sharing it and a client of each, connected to
    /// Redis.
    final class Fleet {
        let redis: Redis
        let origin: OriginServer
        let daemons: [Daemon]
        let clients: [FerryClient]
        var a: Daemon { daemons[0] }
        var b: Daemon { daemons[1] }
        var ca: FerryClient { clients[0] }
        var cb: FerryClient { clients[1] }

        init(machines: Int = 2, _ extra: [String] = []) async throws {
            redis = try Redis()
            origin = try OriginServer()
            let l2 = ["--l2", "redis+unix://\(redis.socket)"] + extra
            daemons = try (0..<machines).map { _ in try Daemon(l2) }
            var clients: [FerryClient] = []
            for d in daemons { clients.append(try await FerryClient.connect(path: d.socket)) }
            self.clients = clients
            for c in clients { try await waitForRedis(c) }
        }

        func stop() {
            for c in clients { c.close() }
            for d in daemons { d.stop() }
            origin.stop()
            redis.stop()
        }
    }

    static func waitForRedis(_ c: FerryClient) async throws {
        for _ in 0..<100 where !(try await c.stats()["l2"]?["connected"]?.boolValue ?? false) { try await Task.sleep(for: .milliseconds(10)) }
    }

    @Test func aFetchOnOneMachineIsARedisHitOnAnother() async throws {
        let fleet = try await Fleet()
        defer { fleet.stop() }
        let (redis, origin, ca, cb) = (fleet.redis, fleet.origin, fleet.ca, fleet.cb)

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
        let env = ["FERRY_SOCKET": fleet.b.socket, "FERRY_NO_AUTOSTART": "1"]
        #expect(try runCommand(Binaries.ferry, ["stats"], environment: env).out.contains("fleet:       Redis \(redis.socket) connected, 1 hits"))
        let metrics = try runCommand(Binaries.ferry, ["stats", "--prometheus"], environment: env).out
        #expect(metrics.contains("ferry_l2_reads_total{result=\"hit\"} 1") && metrics.contains("ferry_l2_connected 1"))
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") {
            let checked = try runCommand("/usr/bin/promtool", ["check", "metrics"], stdin: Data(metrics.utf8))
            #expect(checked.status == 0 && checked.out.isEmpty && checked.err.isEmpty, "\(checked)")
        }
        let key = try redis.cli(["--scan"]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key == "ferry:v1:{GET \(url)}")
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

    /// An unsafe request on one machine, or `ferry http purge` there, drops every machine's copy (published to the
    /// fleet): the next GET on another machine goes to the origin.
    /// A body spooled to a file (past the spool's 256 KiB in memory) is stored apart from its record: up to
    /// `--l2-max-value` it goes to Redis with it (body first), and another machine serves it from there; a larger
    /// one stays on the machine that fetched it.
    @Test func aBodyStoredApartTravelsWithItsRecordUpToTheLimit() async throws {
        let fleet = try await Fleet()
        defer { fleet.stop() }
        let (origin, ca, cb) = (fleet.origin, fleet.ca, fleet.cb)
        let shared = "/bytes?size=600000&cc=max-age%3D60"
        let first = try await ca.fetch(FetchRequest(origin.url(shared)))
        #expect(first.cacheStatus == .miss && first.body.count == 600_000)
        try await FleetCoalescingTests.until("the body and its record in Redis") {
            (try fleet.redis.cli(["--scan"])).split(whereSeparator: \.isNewline).count >= 2
        }
        let onB = try await cb.fetch(FetchRequest(origin.url(shared)))
        #expect(onB.cacheStatus == .hit && onB.body == first.body, "the same 600000 bytes")
        #expect(try await cb.stats()["l2"]?["body_hits"]?.intValue == 1)
        #expect(try origin.countExact(shared) == 1)

        let large = "/bytes?size=1500000&cc=max-age%3D60"
        _ = try await ca.fetch(FetchRequest(origin.url(large)))
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await cb.fetch(FetchRequest(origin.url(large))).cacheStatus == .miss, "over 1 MiB: A's alone")
        #expect(try origin.countExact(large) == 2)
    }

    /// Credentialed responses stay on their machine unless the fleet shares one partition key
    /// (`--l2-partition-secret`): then the same user with the same credentials gets another machine's copy, and
    /// other credentials still do not.
    @Test func credentialPartitionsTravelOnlyWithAFleetSecret() async throws {
        let keys = TempDir()
        defer { keys.remove() }
        let secret = keys.path + "/fleet.key"
        _ = FileManager.default.createFile(atPath: secret, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
                                       attributes: [.posixPermissions: 0o600])
        let fleet = try await Fleet(machines: 2, ["--l2-partition-secret", secret])
        defer { fleet.stop() }
        let (origin, ca, cb, redis) = (fleet.origin, fleet.ca, fleet.cb, fleet.redis)
        let path = "/r?body=mine&cc=max-age%3D60&h=Vary:Authorization"
        func get(_ c: FerryClient, _ token: String) async throws -> FetchResponse {
            try await c.fetch(FetchRequest(origin.url(path), headers: [HTTPHeader("Authorization", "Bearer \(token)")]))
        }
        #expect(try await get(ca, "t1").cacheStatus == .miss)
        try await FleetCoalescingTests.until("the partition in Redis") { (try redis.cli(["--scan"])).contains("(partition ") }
        #expect(try await get(cb, "t1").cacheStatus == .hit, "the same credentials on another machine")
        #expect(try await get(cb, "t2").cacheStatus == .miss, "other credentials: another partition")
        #expect(try origin.countExact(path) == 2)

        let open = keys.path + "/open.key"
        _ = FileManager.default.createFile(atPath: open, contents: Data(repeating: 7, count: 32), attributes: [.posixPermissions: 0o644])
        let refused = try runCommand(Binaries.ferryd, ["--no-config", "--l2-partition-secret", open, "--print-config"])
        #expect(refused.status == 2 && refused.err.contains("chmod 600"), "\(refused)")
    }

    @Test func invalidationsReachEveryMachine() async throws {
        let fleet = try await Fleet()
        defer { fleet.stop() }
        let (origin, a, ca, cb) = (fleet.origin, fleet.a, fleet.ca, fleet.cb)
        try await Task.sleep(for: .milliseconds(100))   // the listeners subscribe once connected
        let target = "/echo?cc=max-age%3D600&t=inv"
        let url = origin.url(target)
        _ = try await ca.fetch(FetchRequest(url))
        _ = try await cb.fetch(FetchRequest(url))
        #expect(try await cb.fetch(FetchRequest(url)).cacheStatus == .hit, "B holds a copy")
        let posted = try await ca.fetch(FetchRequest(url, method: "POST", body: Array("x".utf8)))
        #expect(posted.status == 200)
        var received: Int64 = 0
        for _ in 0..<100 where received == 0 {
            try await Task.sleep(for: .milliseconds(10))
            received = try await cb.stats()["l2"]?["invalidations_received"]?.intValue ?? 0
        }
        #expect(received >= 1)
        #expect(try await cb.fetch(FetchRequest(url)).cacheStatus == .miss, "B's copy went with A's POST")

        let purged = origin.url("/r?body=purge-me&cc=max-age%3D600")
        _ = try await ca.fetch(FetchRequest(purged))
        #expect(try await cb.fetch(FetchRequest(purged)).cacheStatus == .hit)
        let cli = try runCommand(Binaries.ferry, ["http", "purge", purged], environment: ["FERRY_SOCKET": a.socket, "FERRY_NO_AUTOSTART": "1"])
        #expect(cli.status == 0, "\(cli)")
        for _ in 0..<100 where received < 2 {
            try await Task.sleep(for: .milliseconds(10))
            received = try await cb.stats()["l2"]?["invalidations_received"]?.intValue ?? 0
        }
        #expect(try await cb.fetch(FetchRequest(purged)).cacheStatus == .miss, "a purge on A empties B too")
        #expect(try origin.countExact("/r?body=purge-me&cc=max-age%3D600") == 2)
    }

    /// `--l2 redis://:PASSWORD@HOST:PORT/DB`: every connection authenticates and selects the database; a wrong
    /// password is said in the log, nothing reaches Redis, and requests are answered as without it.
    @Test func passwordAndDatabaseFromTheURL() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let port = try freeTCPPort()
        let redis = try Subprocess("/usr/bin/redis-server", ["--port", "\(port)", "--bind", "127.0.0.1", "--requirepass", "s3cret",
                                                              "--save", "", "--appendonly", "no", "--dir", dir.path], stdout: dir.path + "/redis.log")
        defer { redis.stop(signal: SIGKILL) }
        func cli(_ args: [String]) throws -> String {
            try runCommand("/usr/bin/redis-cli", ["-p", "\(port)", "-a", "s3cret", "--no-auth-warning"] + args).out
        }
        for _ in 0..<200 where (try? cli(["PING"]))?.contains("PONG") != true { usleep(10_000) }
        let origin = try OriginServer()
        defer { origin.stop() }
        let good = try Daemon(["--l2", "redis://:s3cret@127.0.0.1:\(port)/3"])
        defer { good.stop() }
        let printed = try runCommand(Binaries.ferryd, ["--no-config", "--l2", "redis://:s3cret@127.0.0.1:\(port)/3", "--print-config"]).out
        #expect(printed.contains("l2 = redis://:***@127.0.0.1:\(port)/3") && !printed.contains("s3cret"))
        let cluster = try runCommand(Binaries.ferryd, ["--no-config", "--l2", "redis-cluster://:s3cret@10.0.0.1:7000,10.0.0.2:7001", "--print-config"])
        #expect(cluster.status == 0 && cluster.out.contains("l2 = redis-cluster://:***@10.0.0.1:7000,10.0.0.2:7001"), "\(cluster)")
        for bad in ["http://h", "redis://user@h", "redis://h:99999", "redis+unix://relative", "redis://h/x",
                    "redis-cluster://h:7000/2", "redis-cluster://h:7000,", "redis-cluster://h:7000,h:0"] {
            let refused = try runCommand(Binaries.ferryd, ["--no-config", "--l2", bad, "--print-config"])
            #expect(refused.status == 2 && refused.err.contains("--l2 \(bad):"), "\(bad): \(refused.err)")
        }
        let braces = try runCommand(Binaries.ferryd, ["--no-config", "--l2-prefix", "team{a}:", "--print-config"])
        #expect(braces.status == 2 && braces.err.contains("--l2-prefix may not contain { or }"), "\(braces)")
        let client = try await FerryClient.connect(path: good.socket)
        defer { client.close() }
        for _ in 0..<100 where !(try await client.stats()["l2"]?["connected"]?.boolValue ?? false) { try await Task.sleep(for: .milliseconds(10)) }
        let url = origin.url("/r?body=db3&cc=max-age%3D60")
        _ = try await client.fetch(FetchRequest(url))
        var keys = ""
        for _ in 0..<50 where keys.isEmpty {
            try await Task.sleep(for: .milliseconds(20))
            keys = try cli(["-n", "3", "--scan"])
        }
        #expect(keys.contains("ferry:v1:{GET \(url)}"), "written to database 3: \(keys)")
        #expect(try cli(["-n", "0", "--scan"]).isEmpty)

        let wrong = try Daemon(["--l2", "redis://:nope@127.0.0.1:\(port)/3"])
        defer { wrong.stop() }
        let other = try await FerryClient.connect(path: wrong.socket)
        defer { other.close() }
        let fresh = origin.url("/r?body=unauthorised&cc=max-age%3D60")
        #expect(try await other.fetch(FetchRequest(fresh)).status == 200)
        try await Task.sleep(for: .milliseconds(200))
        #expect(wrong.log.contains("refused AUTH"), "\(wrong.log)")
        #expect(!(try cli(["-n", "3", "--scan"])).contains("unauthorised"))
    }
}
}
