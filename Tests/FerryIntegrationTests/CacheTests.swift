import Foundation
import Synchronization
import Testing
import FerryClient
import FerryCodable
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
/// `cache.*` against a real ferryd: persistence, TTL, budgets, bad arguments, concurrency, crashes, full disks.
@Suite struct CacheTests {
    @Test func setGetDeleteTouchListClear() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let bytes = (0...255).map { UInt8($0) }
        #expect(try await client.cacheSet("k", bytes))
        let got = try #require(try await client.cacheGet("k"))
        #expect(got.bytes == bytes && got.source == "memory" && got.expiresAt == nil)
        #expect(try await client.cacheSet("k", [1], ifAbsent: true) == false)
        #expect(try await client.cacheGet("k", namespace: "other") == nil, "namespaces isolate")
        #expect(try await client.cacheTouch("k", ttl: .seconds(60)))
        #expect((try await client.cacheGet("k")?.expiresAt ?? 0) > 0)
        #expect(try await client.cacheTouch("missing", ttl: .seconds(1)) == false)
        for k in 0..<1200 { try await client.cacheSet(String(format: "list/%04d", k), [UInt8(k & 255)]) }
        let keys = try await client.cacheKeys(prefix: "list/", pageSize: 500)
        #expect(keys.map(\.key) == (0..<1200).map { String(format: "list/%04d", $0) })
        #expect(try await client.cacheDelete("k"))
        #expect(try await client.cacheDelete("k") == false)
        #expect(try await client.cacheClear() == 1200)
        let stats = try await client.stats()
        #expect(stats["cache"]?["sets"]?.intValue == 1201)
        #expect(stats["cache"]?["memory_hits"]?.intValue == 2)
    }

    @Test func valuesSurviveARestart() async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        let big = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 11) }
        do {
            let daemon = try Daemon(["--cache-dir", cacheDir.path])
            let client = try await FerryClient.connect(path: daemon.socket)
            try await client.cacheSet("small", Array("hello".utf8))
            try await client.cacheSet("big", big, namespace: "blobs")
            try await client.cacheSet("short", [1], ttl: .milliseconds(300))
            client.close()
            daemon.stop()  // SIGTERM: a clean stop
        }
        usleep(400_000)
        let daemon = try Daemon(["--cache-dir", cacheDir.path])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let small = try await client.cacheGet("small")
        #expect(small?.bytes == Array("hello".utf8) && small?.source == "disk")
        #expect(try await client.cacheGet("big", namespace: "blobs")?.bytes == big)
        #expect(try await client.cacheGet("short") == nil, "expired while the daemon was down")
    }

    @Test func ttlExpiryAndTheSweeper() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        for k in 0..<20 { try await client.cacheSet("t\(k)", [1, 2, 3], ttl: .milliseconds(200)) }
        #expect(try await client.cacheGet("t0") != nil)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await client.cacheGet("t0") == nil)
        try await Task.sleep(for: .milliseconds(1500))
        let stats = try await client.stats()
        #expect(stats["cache"]?["disk"]?["entries"]?.intValue == 0, "the sweeper removed the expired rows")
        #expect((stats["cache"]?["expirations"]?.intValue ?? 0) >= 20)
    }

    @Test func memoryAndDiskBudgetsHold() async throws {
        let daemon = try Daemon(["--memory-limit", "100KB", "--disk-limit", "500KB"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        for k in 0..<200 {
            try await client.cacheSet("v\(k)", [UInt8](repeating: UInt8(k & 255), count: 10_000))
        }
        let stats = try await client.stats()
        let cache = try #require(stats["cache"])
        #expect((cache["memory"]?["bytes"]?.intValue ?? .max) <= 100_000)
        #expect((cache["disk"]?["bytes"]?.intValue ?? .max) <= 500_000)
        #expect((cache["evictions"]?["memory"]?.intValue ?? 0) > 0)
        #expect((cache["evictions"]?["disk"]?.intValue ?? 0) > 0)
        #expect(try await client.cacheGet("v0") == nil, "the least recently used went first")
        #expect(try await client.cacheGet("v199")?.bytes.count == 10_000)
    }

    @Test func badArgumentsAreInvalidArgument() async throws {
        let daemon = try Daemon(["--max-value-bytes", "1000"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let cases: [JSONObject] = [
            [:], ["key": ""], ["key": .string(String(repeating: "k", count: 1025))], ["key": 5], ["key": "k", "ttl_ms": -1],
            ["key": "k", "ttl_ms": 0], ["key": "k", "ttl_ms": "5"], ["key": "k", "namespace": "a b"], ["key": "k", "if_absent": "yes"],
        ]
        for args in cases {
            do {
                _ = try await client.call("cache.set", args, body: [1])
                Issue.record("accepted \(args)")
            } catch let e as FerryError {
                #expect(e.code == .invalidArgument, "\(args): \(e)")
            }
        }
        do {
            _ = try await client.call("cache.set", ["key": "big"], body: [UInt8](repeating: 0, count: 1001))
            Issue.record("accepted a value over the limit")
        } catch let e as FerryError {
            #expect(e.code == .resourceExhausted)
        }
        #expect(try await client.cacheGet("big") == nil, "nothing was stored")
        await #expect(throws: FerryError.self) { try await client.call("cache.touch", ["key": "k"]) }
        await #expect(throws: FerryError.self) { try await client.call("cache.list", ["limit": 0]) }
    }

    @Test func concurrentClientsOnTheSameKeys() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let clients = try await withThrowingTaskGroup(of: FerryClient.self) { group in
            for _ in 0..<8 { group.addTask { try await FerryClient.connect(path: daemon.socket) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        defer { clients.forEach { $0.close() } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (c, client) in clients.enumerated() {
                group.addTask {
                    for round in 0..<100 {
                        let key = "shared\(round % 5)"
                        try await client.cacheSet(key, Array("client\(c)-round\(round)".utf8))
                        if let v = try await client.cacheGet(key) {
                            #expect(String(decoding: v.bytes, as: UTF8.self).hasPrefix("client"), "a whole value, never torn")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        for k in 0..<5 {
            let v = try #require(try await clients[0].cacheGet("shared\(k)"))
            #expect(String(decoding: v.bytes, as: UTF8.self).contains("-round"))
        }
    }

    struct Episode: Codable, Equatable {
        var airDate: String
        var writtenBy: String
        var episode: Int
    }

    @Test func codableHelpersUseSnakeCase() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let ep = Episode(airDate: "2008-01-20", writtenBy: "Vince Gilligan", episode: 101)
        try await client.cacheSetJSON("ep", ep)
        let raw = try #require(try await client.cacheGet("ep"))
        #expect(String(decoding: raw.bytes, as: UTF8.self) == #"{"air_date":"2008-01-20","episode":101,"written_by":"Vince Gilligan"}"#)
        #expect(try await client.cacheGetJSON("ep", as: Episode.self) == ep)
        #expect(try await client.cacheGetJSON("none", as: Episode.self) == nil)
    }

    /// kill -9 in the middle of a storm of sets from several clients: the store opens again, nothing torn or wrong
    /// is returned, and (writes being acknowledged only after they commit) no acknowledged write is missing. Also
    /// with a memory tier too small for the keys, killed after the first applies: the worker is then handed some
    /// values as they are evicted and applies them while others are still kept in memory (`JournalKeeping`).
    @Test(arguments: [(nil, 700), ("64KiB", 6_500)] as [(String?, Int)])
    func killDashNineDuringASetStorm(memoryLimit: String?, killAfterMs: Int) async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        let daemon = try Daemon(["--cache-dir", cacheDir.path] + (memoryLimit.map { ["--memory-limit", $0] } ?? []))
        let acked = AckLog()
        let storm = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for c in 0..<6 {
                    group.addTask {
                        let client = try await FerryClient.connect(path: daemon.socket)
                        for version in 0..<100_000 {
                            let key = "c\(c)-k\(version % 40)"
                            let value = CacheTests.value(key: key, version: version)
                            guard (try? await client.cacheSet(key, value)) == true else { return }
                            acked.record(key, version)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await Task.sleep(for: .milliseconds(killAfterMs))
        daemon.signal(SIGKILL)
        _ = await storm.result
        #expect(acked.count > 100, "the storm was running when the daemon died")
        let again = try Daemon(["--cache-dir", cacheDir.path])
        defer { again.stop() }
        let client = try await FerryClient.connect(path: again.socket)
        defer { client.close() }
        try await acked.expectSurvived(in: client) { CacheTests.version(of: $0, key: $1) }
    }

    /// A value that carries its key, its version and a checksum, so any other bytes are detected; `base` to
    /// `base + 3000` bytes of padding.
    static func value(key: String, version: Int, base: Int = 0) -> [UInt8] {
        let head = Array("\(key)|\(version)|".utf8)
        let padding = [UInt8](repeating: UInt8(version & 255), count: base + (version * 37) % 3000)
        let body = head + padding
        let sum = body.reduce(UInt32(0)) { ($0 &* 31) &+ UInt32($1) }
        return body + Array("|\(sum)".utf8)
    }

    static func version(of bytes: [UInt8], key: String, base: Int = 0) -> Int? {
        guard let bar = bytes.lastIndex(of: UInt8(ascii: "|")) else { return nil }
        let body = Array(bytes[..<bar])
        let sum = body.reduce(UInt32(0)) { ($0 &* 31) &+ UInt32($1) }
        guard String(decoding: bytes[(bar + 1)...], as: UTF8.self) == "\(sum)" else { return nil }
        let fields = String(decoding: body.prefix(200), as: UTF8.self).split(separator: "|", maxSplits: 2)
        guard fields.count >= 2, fields[0] == key, let v = Int(fields[1]) else { return nil }
        return value(key: key, version: v, base: base) == bytes ? v : nil
    }

    @Test(.enabled(if: getuid() == 0, "needs root to mount a small tmpfs"))
    func fullDiskRefusesSetsAndKeepsServingGets() async throws {
        let mountPoint = TempDir()
        defer { mountPoint.remove() }
        let mounted = try runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint.path])
        try #require(mounted.status == 0, "mount failed: \(mounted.err)")
        defer { _ = try? runCommand("/bin/umount", ["-l", mountPoint.path]) }
        let daemon = try Daemon(["--cache-dir", mountPoint.path + "/cache"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        try await client.cacheSet("keep", Array("still here".utf8))
        var refused: FerryError?
        for k in 0..<40 {
            do {
                try await client.cacheSet("fill\(k)", [UInt8](repeating: UInt8(k), count: 200_000))
            } catch let e as FerryError {
                refused = e
                break
            }
        }
        #expect(refused?.code == .resourceExhausted, "\(String(describing: refused))")
        #expect(try await client.cacheGet("keep")?.bytes == Array("still here".utf8))
        _ = try await client.ping()
    }

    @Test func cliCacheCommands() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let env = ["FERRY_SOCKET": daemon.socket]
        let binary = Data((0...255).map { UInt8($0) } + [0, 0, 10, 13])
        let set = try runCommand(Binaries.ferry, ["cache", "set", "bin", "-", "--ttl", "1h"], environment: env, stdin: binary)
        #expect(set.status == 0, "\(set.err)")
        let dir = TempDir()
        defer { dir.remove() }
        let get = try runCommand(Binaries.ferry, ["cache", "get", "bin", "-o", dir.path + "/out"], environment: env)
        #expect(get.status == 0)
        #expect(FileManager.default.contents(atPath: dir.path + "/out") == binary, "binary-safe both ways")
        #expect(try runCommand(Binaries.ferry, ["cache", "set", "word", "hello", "-n", "ns1"], environment: env).status == 0)
        #expect(try runCommand(Binaries.ferry, ["cache", "get", "word", "--namespace", "ns1"], environment: env).out == "hello")
        let missing = try runCommand(Binaries.ferry, ["cache", "get", "word"], environment: env)
        #expect(missing.status == 1 && missing.err.contains("not_found"))
        #expect(try runCommand(Binaries.ferry, ["cache", "ls"], environment: env).out == "bin\n")
        #expect(try runCommand(Binaries.ferry, ["cache", "del", "bin"], environment: env).status == 0)
        #expect(try runCommand(Binaries.ferry, ["cache", "del", "bin"], environment: env).status == 1)
        #expect(try runCommand(Binaries.ferry, ["cache", "clear", "-n", "ns1"], environment: env).out.contains("removed 1"))
        #expect(try runCommand(Binaries.ferry, ["cache", "frob"], environment: env).status == 2)
        #expect(try runCommand(Binaries.ferry, ["cache", "set", "k", "v", "--ttl", "soon"], environment: env).status == 2)
    }
}
}

/// The last acknowledged version of each key, shared by the storm's tasks.
final class AckLog: Sendable {
    private let state = Mutex<[String: Int]>([:])
    func record(_ key: String, _ version: Int) { state.withLock { $0[key] = max($0[key] ?? -1, version) } }
    var count: Int { state.withLock { $0.count } }
    var snapshot: [String: Int] { state.withLock { $0 } }

    /// Every key recorded holds, in the daemon `client` talks to, its last acknowledged version or a later one,
    /// untorn (`version` reads it from the value, nil when the bytes are not one).
    func expectSurvived(in client: FerryClient, version: ([UInt8], String) -> Int?,
                        sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for (key, lastAcked) in snapshot {
            let got = try #require(try await client.cacheGet(key), "acknowledged key \(key) is missing", sourceLocation: sourceLocation)
            let found = try #require(version(got.bytes, key), "value of \(key) is torn or wrong", sourceLocation: sourceLocation)
            #expect(found >= lastAcked, "\(key): got version \(found), acknowledged \(lastAcked)", sourceLocation: sourceLocation)
        }
    }
}

extension IntegrationTests {
/// Values larger than one frame: uploaded in continuation frames, read back in chunk events.
@Suite struct LargeValueTests {
    @Test func tenMebibyteValuesRoundTrip() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let value = (0..<(10 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2654435761) >> 13) }
        #expect(try await client.cacheSet("big", value))
        let back = try #require(try await client.cacheGet("big"))
        #expect(back.bytes == value)
        // Over max_value_bytes (16 MiB): refused, nothing stored, the connection still works.
        do {
            try await client.cacheSet("huge", [UInt8](repeating: 1, count: (16 << 20) + 1))
            Issue.record("a value over the limit was accepted")
        } catch let e as FerryError {
            #expect(e.code == .resourceExhausted)
        }
        #expect(try await client.cacheGet("huge") == nil)
        #expect(try await client.cacheGet("big")?.bytes.count == 10 << 20)
    }

    @Test func rawContinuationFramesAndCancellingAnUpload() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawSocket(daemon.socket)
        try raw.hello()
        try raw.send(["id": 5, "op": "cache.set", "args": ["key": "parts"], "more": true], body: Array("ab".utf8))
        try raw.send(["id": 5, "more": true], body: Array("cd".utf8))
        try raw.send(["id": 6, "op": "ping"])  // other requests interleave freely
        #expect(try raw.readReply() == .result(id: 6, ["pong": true]))
        try raw.send(["id": 5, "more": false], body: Array("ef".utf8))
        #expect(try raw.readReply() == .result(id: 5, ["stored": true]))
        try raw.send(["id": 7, "op": "cache.get", "args": ["key": "parts"]])
        guard let (_, body) = try raw.readFrame() else { Issue.record("EOF"); return }
        #expect(body == Array("abcdef".utf8))
        // An upload cancelled half-way: the rest of its parts are dropped, nothing is stored.
        try raw.send(["id": 8, "op": "cache.set", "args": ["key": "half"], "more": true], body: [1])
        try raw.send(["id": 9, "op": "cancel", "args": ["id": 8]])
        #expect(try raw.readReply() == .error(id: 8, WireError(.cancelled, "cancelled by the client")))
        #expect(try raw.readReply() == .result(id: 9, ["cancelled": true]))
        try raw.send(["id": 8, "more": false], body: [2])
        try raw.send(["id": 10, "op": "cache.get", "args": ["key": "half"]])
        guard case .error(10, let e)? = try raw.readReply() else { Issue.record("expected not_found"); return }
        #expect(e.code == .notFound)
        // An operation that takes no body cannot be uploaded to.
        try raw.send(["id": 11, "op": "stats", "more": true], body: [1])
        guard case .error(11, let s)? = try raw.readReply() else { Issue.record("expected invalid_argument"); return }
        #expect(s.code == .invalidArgument)
    }
}
}
