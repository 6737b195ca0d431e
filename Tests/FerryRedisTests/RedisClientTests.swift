import Foundation
import Testing
import FerryLoop
@testable import FerryRedis

/// A real redis-server on a Unix socket in a temporary directory, stopped by PID.
final class RedisServer {
    let dir: String
    let socket: String
    private var process: Process?

    init() throws {
        dir = NSTemporaryDirectory() + "ferry-redis-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        socket = dir + "/redis.sock"
        try start()
    }

    func start() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        p.arguments = ["--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                       "--dir", dir, "--logfile", dir + "/redis.log"]
        try p.run()
        process = p
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: socket) { usleep(10_000) }
    }

    var pid: pid_t { process?.processIdentifier ?? 0 }

    /// SIGKILL: a server started from a test thread may have SIGTERM blocked (the child inherits the mask), and
    /// this one keeps nothing worth a clean shutdown.
    func stop() {
        guard let p = process, p.isRunning else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        process = nil
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// `RedisClient` against a real redis-server: binary-safe values, answers at once while Redis is down, reconnects
/// when it is back, and a frozen Redis costs each command its timeout and no more.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server")))
struct RedisClientTests {
    /// Runs `steps` one after the other on the loop; each calls its `next` when done (or the test ends at 20 s).
    static func run(_ loop: EventLoop, _ client: RedisClient, _ steps: [(@escaping () -> Void) -> Void]) {
        var index = 0
        var finished = false
        let watchdog = LoopTimer(loop: loop) { t in
            Issue.record("the steps did not finish within 20 s (at step \(index))")
            client.close()
            t.close()
        }
        watchdog.start(afterMs: 20_000)
        func next() {
            guard !finished else { return }
            guard index < steps.count else {
                finished = true
                client.close()
                watchdog.close()
                return
            }
            let step = steps[index]
            index += 1
            step(next)
        }
        next()
        loop.run()
    }

    /// Calls `then` once `condition` holds, checking every 10 ms.
    static func when(_ loop: EventLoop, _ condition: @escaping () -> Bool, then: @escaping () -> Void) {
        let timer = LoopTimer(loop: loop) { t in
            if condition() {
                t.close()
                then()
            } else {
                t.start(afterMs: 10)
            }
        }
        timer.start(afterMs: 1)
    }

    @Test func valuesDownAndBackAndFrozen() throws {
        let redis = try RedisServer()
        let loop = EventLoop()
        let client = RedisClient(loop: loop, endpoint: .unix(path: redis.socket), timeoutMs: 200)
        var changes: [String] = []
        client.onChange = { changes.append($0) }
        client.start()
        let value: [UInt8] = [0, 1, 2, 255, 10, 13, 0]
        var down: (reply: RedisReply, ms: Int64)?
        var frozen: [(reply: RedisReply, ms: Int64)] = []
        var lostAfterKill = false
        var afterRestart: RedisReply?
        Self.run(loop, client, [
            { next in Self.when(loop, { client.isConnected }, then: next) },
            { next in
                client.send([Array("SET".utf8), Array("k".utf8), value, Array("PX".utf8), Array("60000".utf8)]) { reply in
                    #expect(reply == .status("OK"))
                }
                client.send(["GET", "k"]) { reply in
                    #expect(reply == .string(value), "binary-safe both ways")
                    next()
                }
            },
            { next in
                client.send(["PTTL", "k"]) { reply in
                    if case .integer(let ms) = reply { #expect((59_000...60_000).contains(ms)) } else { Issue.record("PTTL: \(reply)") }
                    client.send(["NOSUCHCOMMAND"]) { reply in
                        if case .error(let message) = reply { #expect(message.contains("unknown command")) } else { Issue.record("\(reply)") }
                        next()
                    }
                }
            },
            { next in
                redis.stop()
                Self.when(loop, { !client.isConnected }) {
                    let started = WallClock.nowMs()
                    client.send(["GET", "k"]) { reply in down = (reply, WallClock.nowMs() - started) }
                    next()
                }
            },
            { next in
                try? redis.start()
                Self.when(loop, { client.isConnected }) {
                    client.send(["GET", "k"]) { reply in
                        afterRestart = reply
                        next()
                    }
                }
            },
            { next in
                kill(redis.pid, SIGSTOP)   // alive but answering nothing: a Redis stuck in a long command
                let started = WallClock.nowMs()
                for _ in 0..<3 { client.send(["GET", "k"]) { reply in frozen.append((reply, WallClock.nowMs() - started)) } }
                Self.when(loop, { frozen.count == 3 }) {
                    kill(redis.pid, SIGCONT)
                    next()
                }
            },
            { next in
                // Killed with a command of ours unread: the socket holds an error (ECONNRESET), which must still be
                // seen as the connection lost (hiredis's own libuv adapter ignored it and hung for good).
                kill(redis.pid, SIGSTOP)
                client.send(["SET", "k", String(repeating: "x", count: 100_000)]) { _ in }
                redis.stop()
                var polls = 0
                Self.when(loop, { polls += 1; return !client.isConnected || polls > 300 }) {
                    lostAfterKill = !client.isConnected
                    try? redis.start()
                    Self.when(loop, { polls += 1; return client.isConnected || polls > 600 }) { next() }
                }
            },
        ])
        #expect(lostAfterKill, "a Redis killed with our command unread is a lost connection")
        #expect(down.map { if case .unavailable = $0.reply { return $0.ms <= 5 } else { return false } } == true,
                "while down, answered at once: \(String(describing: down))")
        #expect(afterRestart == .nil, "reconnected to the new (empty) Redis")
        #expect(frozen.allSatisfy { if case .unavailable(let why) = $0.reply { return why.contains("within 200 ms") && (190...600).contains($0.ms) } else { return false } },
                "each frozen command costs its timeout: \(frozen)")
        #expect(client.counters.connections == 3 && client.counters.timeouts == 3, "\(client.counters)")
        #expect(changes.first == "connected to Redis at \(redis.socket)" && changes.contains { $0.contains("is down") })
        redis.stop()
    }

    /// A subscription delivers each message's payload, and is made again after Redis restarts.
    @Test func subscriptionsSurviveARestart() throws {
        let redis = try RedisServer()
        let loop = EventLoop()
        let publisher = RedisClient(loop: loop, endpoint: .unix(path: redis.socket), timeoutMs: 500)
        let listener = RedisClient(loop: loop, endpoint: .unix(path: redis.socket), timeoutMs: 500)
        var got: [String] = []
        listener.subscribe("news") { got.append(String(decoding: $0, as: UTF8.self)) }
        publisher.start()
        listener.start()
        Self.run(loop, publisher, [
            { next in Self.when(loop, { publisher.isConnected && listener.isConnected }, then: next) },
            { next in
                let retry = LoopTimer(loop: loop) { t in
                    if got.isEmpty { publisher.send(["PUBLISH", "news", "one"]) { _ in }; t.start(afterMs: 20) } else { t.close() }
                }
                retry.start(afterMs: 1)
                Self.when(loop, { !got.isEmpty }, then: next)
            },
            { next in
                redis.stop()
                Self.when(loop, { !listener.isConnected }) {
                    try? redis.start()
                    Self.when(loop, { listener.isConnected && publisher.isConnected }, then: next)
                }
            },
            { next in
                let retry = LoopTimer(loop: loop) { t in
                    if got.last != "two" { publisher.send(["PUBLISH", "news", "two"]) { _ in }; t.start(afterMs: 20) } else { t.close() }
                }
                retry.start(afterMs: 1)
                Self.when(loop, { got.last == "two" }) {
                    listener.close()
                    next()
                }
            },
        ])
        #expect(got.first == "one" && got.last == "two", "\(got)")
        #expect(listener.counters.messages == UInt64(got.count) && listener.counters.connections == 2)
        redis.stop()
    }

    /// A write to a Redis that stopped reading is EPIPE, never a SIGPIPE that kills this process: the test runner
    /// keeps SIGPIPE's default (which kills), as a program embedding the library may. The "Redis" here is a socket
    /// that accepts and shuts its reading side, so the write fails while nothing is there to read: a lost connection.
    @Test func aWriteToAGoneRedisIsALossNotASignal() throws {
        var now = sigaction()
        sigaction(SIGPIPE, nil, &now)
        try #require(now.__sigaction_handler.sa_handler == nil, "SIGPIPE is at its default here (SIG_DFL), or this proves nothing")
        let dir = NSTemporaryDirectory() + "ferry-gone-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/gone.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(listener, 4) == 0)
        let loop = EventLoop()
        let client = RedisClient(loop: loop, endpoint: .unix(path: path), timeoutMs: 2_000)
        var accepted: Int32 = -1
        var reply: RedisReply?
        var lost = false
        client.onLost = { lost = true }
        client.start()
        Self.run(loop, client, [
            { next in
                Self.when(loop, {
                    if accepted < 0 { accepted = accept(listener, nil, nil) }
                    return accepted >= 0 && client.isConnected
                }) {
                    shutdown(accepted, Int32(SHUT_RD))
                    next()
                }
            },
            { next in
                client.send(["SET", "k", String(repeating: "x", count: 1_000)]) { reply = $0 }
                var polls = 0
                Self.when(loop, { polls += 1; return (lost && reply != nil) || polls > 300 }, then: next)
            },
        ])
        if accepted >= 0 { close(accepted) }
        #expect(lost, "the failed write is a lost connection")
        if case .unavailable? = reply {} else { Issue.record("the command is answered unavailable: \(String(describing: reply))") }
    }
}
