import Foundation
import Testing
import FerryClient

/// `ferry cache` keeps redis-cli's habits: TTLs in days and weeks, 0 and negative refused, `ttl`, `exists`, `touch`,
/// `get --json`, `ls -l`, and `del` of a missing key as the help says.
extension IntegrationTests {
@Suite struct CacheCLITests {
    @Test func redisCliHabits() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        func ferry(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
            try runCommand(Binaries.ferry, ["cache"] + args, environment: ["FERRY_SOCKET": daemon.socket])
        }
        #expect(try ferry(["set", "day", "hello", "--ttl", "1d"]).status == 0)
        let left = Int(try ferry(["ttl", "day"]).out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect((86_390...86_400).contains(left), "a day, in seconds: \(left)")
        #expect(try ferry(["set", "plain", "v"]).status == 0)
        #expect(try ferry(["ttl", "plain"]).out == "-1\n", "no expiry: -1, as redis-cli")
        #expect(try ferry(["ttl", "missing"]).out == "-2\n", "no such key: -2, as redis-cli")
        let yes = try ferry(["exists", "day"]), no = try ferry(["exists", "missing"])
        #expect(yes.out == "1\n" && yes.status == 0 && no.out == "0\n" && no.status == 1 && no.err.isEmpty)
        #expect(try ferry(["touch", "plain", "1w"]).status == 0)
        #expect(try ferry(["ttl", "plain"]).out == "604800\n")
        #expect(try ferry(["touch", "plain", "never"]).status == 0 && ferry(["ttl", "plain"]).out == "-1\n")
        #expect(try ferry(["touch", "missing", "5s"]).status == 1)
        for bad in ["0", "-5s", "0s", "soon"] {
            let refused = try ferry(["set", "bad", "x", "--ttl", bad])
            #expect(refused.status == 2, "--ttl \(bad): \(refused)")
        }
        #expect(try ferry(["exists", "bad"]).out == "0\n", "nothing stored by a refused set")
        let json = try JSONSerialization.jsonObject(with: Data(try ferry(["get", "day", "--json"]).out.utf8)) as? [String: Any]
        #expect(json?["value"] as? String == "hello" && json?["size"] as? Int == 5 && json?["expires_at"] != nil)
        let long = try ferry(["ls", "-l"]).out.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(long.contains { $0.first == "plain" && $0[1] == "1" && $0[2] == "-1" }, "\(long)")
        let gone = try ferry(["del", "missing"])
        #expect(gone.status == 1 && gone.err.contains("not_found"), "as the help says")
        #expect(try ferry(["--help"]).out.contains("exit 1 when there was no such key"))
    }

    /// `incr` is atomic in the daemon: 8 connections × 250 increments of one key, from two clients' worth of tasks,
    /// come to exactly 2,000 (a read-then-set in the client would lose some); `decr` with a negative operand; a word
    /// and an overflow are refused and leave the value.
    @Test func incrIsAtomicAcrossConnections() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        func ferry(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
            try runCommand(Binaries.ferry, ["cache"] + args, environment: ["FERRY_SOCKET": daemon.socket])
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let client = try await FerryClient.connect(path: daemon.socket)
                    defer { client.close() }
                    try await withThrowingTaskGroup(of: Int64.self) { inner in
                        for _ in 0..<250 { inner.addTask { try await client.cacheIncr("hits") } }
                        try await inner.waitForAll()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try ferry(["get", "hits"]).out == "2000", "a counter reads as its decimal digits")
        #expect(try ferry(["incr", "hits", "-5"]).out == "1995\n", "a negative operand is not an option")
        #expect(try ferry(["decr", "hits", "995"]).out == "1000\n")
        #expect(try ferry(["incr", "fresh", "--ttl", "1h"]).out == "1\n")
        let left = Int(try ferry(["ttl", "fresh"]).out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect((3590...3600).contains(left), "a key incr creates takes --ttl: \(left)")
        #expect(try ferry(["set", "word", "hello"]).status == 0)
        let word = try ferry(["incr", "word"])
        #expect(word.status == 1 && word.err.contains("failed_precondition") && word.err.contains("not a decimal"), "\(word)")
        #expect(try ferry(["get", "word"]).out == "hello")
        #expect(try ferry(["set", "max", "9223372036854775807"]).status == 0)
        let over = try ferry(["incr", "max"])
        #expect(over.status == 1 && over.err.contains("overflow"), "\(over)")
        #expect(try ferry(["incr", "hits", "x"]).status == 2)
    }
}
}
