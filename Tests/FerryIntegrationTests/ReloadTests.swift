import Foundation
import Testing
import FerryClient

/// SIGHUP as nginx and Varnish users expect: the log file opened again (after logrotate moved it), the configuration
/// read again — budgets and the log level now, the rest said to need a restart, a broken file refused with the
/// running configuration kept; the daemon and its socket survive. `--idle-exit` stops an idle daemon.
extension IntegrationTests {
@Suite struct ReloadTests {
    @Test func sighupReloadsAndReopensTheLog() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let conf = dir.path + "/ferryd.conf", log = dir.path + "/ferryd.log"
        try "memory-limit = 64MiB\nimage-max-entries = 100\n".write(toFile: conf, atomically: true, encoding: .utf8)
        let daemon = try Daemon(["--config", conf, "--log-file", log])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        for k in 0..<40 { try await client.cacheSet("k\(k)", [UInt8](repeating: 1, count: 1 << 20)) }
        #expect(try await client.stats()["cache"]?["memory"]?["budget"]?.intValue == 64 << 20)

        try "memory-limit = 8MiB\nimage-max-entries = 7\ndisk-limit = 1GiB\n".write(toFile: conf, atomically: true, encoding: .utf8)
        try FileManager.default.moveItem(atPath: log, toPath: log + ".1")
        kill(daemon.pid, SIGHUP)
        let line = try await waitForLine(in: log, containing: "SIGHUP")
        #expect(line.contains("changed now: memory-limit, image-max-entries") && line.contains("needs a restart (kept as running): disk-limit"), "\(line)")
        let stats = try await client.stats()
        #expect(stats["cache"]?["memory"]?["budget"]?.intValue == 8 << 20)
        #expect((stats["cache"]?["memory"]?["bytes"]?.intValue ?? .max) <= 8 << 20, "a smaller budget evicts now")
        #expect(stats["image"]?["max_entries"]?.intValue == 7)
        #expect(stats["cache"]?["disk"]?["budget"]?.intValue != 1 << 30, "the disk budget waits for a restart")
        #expect(try await client.cacheGet("k0") != nil, "evicted from memory, still on disk")

        try "memory-limit = lots\n".write(toFile: conf, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        let refused = try await waitForLine(in: log, containing: "does not read")
        #expect(refused.contains("\(conf):1: memory-limit"))
        #expect(try await client.stats()["cache"]?["memory"]?["budget"]?.intValue == 8 << 20, "the running configuration stays")
        #expect(try await client.ping() >= .zero, "alive after three SIGHUPs")
    }

    /// `ferry logs` finds the running daemon's file (stats' log.file); `-n 1` the last line; `-f` follows it across
    /// a rotation (logrotate moves the file, SIGHUP makes a new one).
    @Test func ferryLogsShowsAndFollowsTheLog() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let log = dir.path + "/ferryd.log"
        let daemon = try Daemon(["--log-file", log])
        defer { daemon.stop() }
        let env = ["FERRY_SOCKET": daemon.socket, "FERRY_NO_AUTOSTART": "1"]
        let all = try runCommand(Binaries.ferry, ["logs"], environment: env)
        #expect(all.status == 0 && all.out.contains("listening on \(daemon.socket)"), "\(all)")
        let last = try runCommand(Binaries.ferry, ["logs", "-n", "1"], environment: env)
        let file = try String(contentsOfFile: log, encoding: .utf8)
        #expect(last.out.split(separator: "\n").count == 1 && file.contains(last.out), "\(last.out)")
        let follow = Task.detached { try runCommand("/usr/bin/timeout", ["2", Binaries.ferry, "logs", "-f", "-n", "0"], environment: env) }
        try await Task.sleep(for: .milliseconds(600))
        try FileManager.default.moveItem(atPath: log, toPath: log + ".1")
        kill(daemon.pid, SIGHUP)
        let followed = try await follow.value
        #expect(followed.out.contains("SIGHUP") && !followed.out.contains("listening on"), "only what came after: \(followed.out)")
    }

    @Test func idleExitStopsADaemonNobodyUses() async throws {
        let daemon = try Daemon(["--idle-exit", "1s"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        try await Task.sleep(for: .milliseconds(2500))
        _ = try await client.stats()   // a connection open: not idle
        client.close()
        #expect(daemon.waitExit(timeout: 6) == 0, "stopped, cleanly, after a second with no connection")
        #expect(daemon.log.contains("--idle-exit"))
    }
}
}

/// The first line of `path` containing `text`, waiting up to 5 s for it.
func waitForLine(in path: String, containing text: String) async throws -> String {
    for _ in 0..<100 {
        if let content = try? String(contentsOfFile: path, encoding: .utf8),
           let line = content.split(separator: "\n").last(where: { $0.contains(text) }) {
            return String(line)
        }
        try await Task.sleep(for: .milliseconds(50))
    }
    return ""
}
