import Foundation
import Testing
import FerryClient
#if canImport(Glibc)
import Glibc
#endif

/// The CLI's quick commands (`QuickCommands`: `ping` and `cache get|set|del|exists|ttl|touch|incr|decr` through a
/// `BlockingConnection`) print and exit exactly as their general forms do, without starting a thread; and
/// `BlockingConnection` answers as `FerryClient` does.
extension IntegrationTests {
@Suite struct QuickCommandTests {
    /// The same commands against two daemons, quick on one and general (`FERRY_CLI_QUICK=0`) on the other: the
    /// same output, byte for byte (times aside), the same exit codes, the same messages, the same file.
    @Test func bothFormsPrintTheSame() throws {
        let quick = try Daemon(), general = try Daemon()
        defer { quick.stop(); general.stop() }
        let dir = TempDir()
        defer { dir.remove() }
        // Past the descriptor threshold: the value comes as a descriptor both ways.
        let big = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        let script: [[String]] = [
            ["ping", "-c", "2"], ["ping", "-c", "0"],
            ["cache", "set", "k", "hello"], ["cache", "set", "k", "other", "--if-absent"], ["cache", "get", "k"],
            ["cache", "get", "k", "--json"], ["cache", "get", "nope", "-n", "ns1"], ["cache", "exists", "k"],
            ["cache", "exists", "nope"], ["cache", "ttl", "k"], ["cache", "ttl", "nope"], ["cache", "set", "t", "v", "--ttl", "30s"],
            ["cache", "ttl", "t"], ["cache", "del", "t"], ["cache", "del", "t"], ["cache", "set", "k", "v", "--ttl", "0s"],
            ["cache", "set", "", "v"], ["cache", "get", String(repeating: "x", count: 2000)], ["cache", "set", "ü/ключ", "ß", "-n", "other"],
            ["cache", "get", "ü/ключ", "-n", "other", "--json"], ["cache", "get", "big"], ["cache", "get", "big", "-o", "OUT"],
            ["cache", "get", "big", "--json"], ["cache", "exists", "big"], ["cache", "get", "k", "-n", "bad namespace"],
            ["cache", "incr", "n"], ["cache", "incr", "n", "41"], ["cache", "decr", "n", "2"], ["cache", "decr", "n", "x"],
            ["cache", "incr", "k"], ["cache", "incr", "fresh", "--ttl", "1h"], ["cache", "ttl", "fresh"],
            ["cache", "touch", "fresh", "never"], ["cache", "ttl", "fresh"], ["cache", "touch", "nope", "5s"],
            ["cache", "touch", "fresh", "0s"], ["cache", "incr", "n", "9223372036854775807"],
        ]
        for daemon in [quick, general] {
            let stored = try runCommand(Binaries.ferry, ["cache", "set", "big", "-"], environment: ["FERRY_SOCKET": daemon.socket], stdin: big)
            #expect(stored.status == 0, "\(stored.err)")
        }
        for words in script {
            var outputs: [String] = []
            for (daemon, form) in [(quick, "1"), (general, "0")] {
                let out = dir.path + "/out." + form
                let run = try runCommand(Binaries.ferry, words.map { $0 == "OUT" ? out : $0 },
                                         environment: ["FERRY_SOCKET": daemon.socket, "FERRY_CLI_QUICK": form])
                let file = FileManager.default.contents(atPath: out).map { $0 == big ? "the value" : "other bytes" } ?? "no file"
                try? FileManager.default.removeItem(atPath: out)
                let printed = run.out.replacingOccurrences(of: #"[0-9.]+ ms"#, with: "T ms", options: .regularExpression)
                    .replacingOccurrences(of: #""created_at":[0-9]+"#, with: "C", options: .regularExpression)
                outputs.append("\(run.status) \(run.err) \(file) \(printed)")
            }
            #expect(outputs[0] == outputs[1], "ferry \(words.joined(separator: " ")): quick \(outputs[0].prefix(300)) / general \(outputs[1].prefix(300))")
        }
        let value = try runCommand(Binaries.ferry, ["cache", "get", "k"], environment: ["FERRY_SOCKET": quick.socket])
        #expect(value.out == "hello", "what both forms agreed on is the value itself")
    }

    /// The quick form runs in one thread; the general one starts the runtime's (the reason for the quick form).
    /// Counted in /proc while a long `ping -c` runs.
    @Test func quickCommandsStartNoThread() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        func threads(quick: Bool) throws -> Int {
            let ping = try Subprocess(Binaries.ferry, ["ping", "-c", "1000000"],
                                      environment: ["FERRY_SOCKET": daemon.socket, "FERRY_CLI_QUICK": quick ? "1" : "0"], stdout: "/dev/null")
            defer { ping.stop() }
            // Once pinging (a connection is open), the threads it has are the ones it keeps.
            var seen = 0
            for _ in 0..<100 {
                usleep(20_000)
                let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(ping.pid)/fd")) ?? []
                seen = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(ping.pid)/task"))?.count ?? 0
                if fds.count > 3 && seen > 0 { break }
            }
            return seen
        }
        #expect(try threads(quick: true) == 1)
        #expect(try threads(quick: false) > 1, "the general form starts threads, so the count above could have been more")
    }

    /// `BlockingConnection` against a real daemon: the calls, a large value as a descriptor or as bytes, the
    /// daemon's errors as they are, and the connection's own.
    @Test func blockingConnectionAnswersAsTheClientDoes() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let connection = try BlockingConnection(path: daemon.socket, clientName: "quick-test")
        #expect(connection.serverName.hasPrefix("ferryd"))
        #expect(try connection.ping() > .zero)
        #expect(try connection.cacheSet("a", Array("one".utf8), ttl: .seconds(60)))
        #expect(try !connection.cacheSet("a", Array("two".utf8), ifAbsent: true))
        let a = try connection.cacheGet("a")
        #expect(a?.bytes == Array("one".utf8) && a?.expiresAt != nil && a?.source == "memory")
        #expect(try connection.cacheGet("a", namespace: "elsewhere") == nil)
        let big = (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 * 13) }
        #expect(try connection.cacheSet("big", big))
        #expect(connection.offersBodyFiles)
        let asFile = try connection.cacheGet("big", bodyAsFile: true)
        #expect(asFile?.file != nil && asFile?.bytes.isEmpty == true && asFile?.size == big.count)
        #expect(try asFile?.file?.bytes() == big)
        #expect(try connection.cacheGet("big")?.bytes == big, "without bodyAsFile the descriptor is read")
        // An answer after a descriptor pairs with its own: a small value again.
        #expect(try connection.cacheGet("a")?.bytes == Array("one".utf8))
        #expect(try connection.cacheDelete("a") && !connection.cacheDelete("a"))
        #expect(try connection.cacheIncr("n", by: 5, ttl: .seconds(60)) == 5 && connection.cacheIncr("n", by: -7) == -2)
        #expect(try connection.cacheTouch("n", ttl: nil) && connection.cacheGet("n")?.expiresAt == nil)
        #expect(try !connection.cacheTouch("gone", ttl: .seconds(1)))
        // The daemon's refusal, as the daemon words it; the connection goes on.
        #expect { try connection.cacheSet("", [1]) } throws: { ($0 as? FerryError)?.code == .invalidArgument && ($0 as? FerryError)?.raisedBy != .connection }
        #expect { try connection.call("no.such.op") } throws: { ($0 as? FerryError)?.code == .unimplemented }
        // The request's own deadline, answered by the daemon.
        #expect { try connection.call("ping", ["delay_ms": 2000], timeoutMs: 100) } throws: { ($0 as? FerryError)?.code == .deadlineExceeded }
        #expect(try connection.ping() > .zero)
        // A value too large for one frame goes in pieces through FerryClient only.
        #expect { try connection.cacheSet("huge", [UInt8](repeating: 1, count: 5 << 20)) } throws: { ($0 as? FerryError)?.code == .resourceExhausted }
        connection.close()
        #expect { try connection.ping() } throws: { ($0 as? FerryError)?.raisedBy == .connection }
        // No daemon: the connection's own `unavailable`, which tells the CLI to start one.
        #expect { try BlockingConnection(path: daemon.dir.path + "/none.sock", clientName: "x") } throws: {
            ($0 as? FerryError)?.code == .unavailable && ($0 as? FerryError)?.raisedBy == .connection
        }
    }
}
}
