import Foundation
import Testing
import FerryClient

/// One configuration for ferryd: a file, `FERRY_*` variables over it, flags over both; `--print-config` says where
/// each value came from; bad values name the file, line and setting; `ferry daemon start FLAGS` passes them on, and
/// says at once why a daemon it started died.
extension IntegrationTests {
@Suite struct ConfigurationTests {
    @Test func layersAndPrintConfig() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.path + "/ferryd.conf"
        try "memory-limit = 1GiB\n# a comment\nmax-value-bytes = 1MiB\nallow-other-users = yes\n".write(toFile: file, atomically: true, encoding: .utf8)
        let r = try runCommand(Binaries.ferryd, ["--config", file, "--socket", dir.path + "/s", "--print-config", "--max-value-bytes", "2MiB"],
                               environment: ["FERRY_MEMORY_LIMIT": "512MiB"])
        #expect(r.status == 0, "\(r.err)")
        let lines = r.out.split(separator: "\n").map { $0.split(separator: "#", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) } }
        func row(_ name: String) -> [String]? { lines.first { $0.first?.hasPrefix(name + " = ") == true } }
        #expect(row("memory-limit") == ["memory-limit = 512MiB", "environment FERRY_MEMORY_LIMIT"])
        #expect(row("max-value-bytes") == ["max-value-bytes = 2MiB", "command line"])
        #expect(row("allow-other-users") == ["allow-other-users = true", "\(file):4"])
        #expect(row("disk-limit") == ["disk-limit = 2GiB", "default"])
        #expect(r.out.contains("# configuration file: \(file)"))

        try "memory-limit = 1GiB\n\ndisk-limit = lots\n".write(toFile: file, atomically: true, encoding: .utf8)
        let bad = try runCommand(Binaries.ferryd, ["--config", file, "--socket", dir.path + "/s"])
        #expect(bad.status == 2 && bad.err.contains("\(file):3: disk-limit: needs a size"), "\(bad.err)")
        let missing = try runCommand(Binaries.ferryd, ["--config", dir.path + "/none.conf", "--socket", dir.path + "/s"])
        #expect(missing.status == 2 && missing.err.contains("cannot read the configuration file"))
    }

    /// The auto-started daemon reads the user's file ($XDG_CONFIG_HOME/ferry/ferryd.conf): a value over its
    /// max-value-bytes is refused. `ferry daemon start --bad-value` says why at once.
    @Test func theAutoStartedDaemonReadsTheUsersFileAndDiesAudibly() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.path + "/config/ferry", withIntermediateDirectories: true)
        try "max-value-bytes = 1KiB\ncache-dir = \(dir.path)/cache\n".write(toFile: dir.path + "/config/ferry/ferryd.conf", atomically: true, encoding: .utf8)
        let env = ["FERRY_SOCKET": dir.path + "/run/ferryd.sock", "XDG_CONFIG_HOME": dir.path + "/config",
                   "PATH": (Binaries.ferryd as NSString).deletingLastPathComponent + ":/usr/bin:/bin"]
        let started = Date()
        let refused = try runCommand(Binaries.ferry, ["daemon", "start", "--disk-limit", "lots"], environment: env)
        #expect(refused.status == 3 && refused.err.contains("ferryd exited at once (status 2)") && refused.err.contains("--disk-limit needs a size"),
                "\(refused.err)")
        #expect(Date().timeIntervalSince(started) < 5, "said at once, not after the 10 s wait")

        let start = try runCommand(Binaries.ferry, ["daemon", "start", "--memory-limit", "64MiB"], environment: env)
        #expect(start.status == 0, "\(start.err)")
        let client = try await FerryClient.connect(path: dir.path + "/run/ferryd.sock")
        defer { client.close() }
        let pid = try await client.stats()["pid"]?.intValue ?? 0
        defer { kill(pid_t(pid), SIGTERM); waitForExit(pid_t(pid)) }
        #expect(client.limits.maxValueBytes == 1024, "from the user's configuration file")
        let big = try runCommand(Binaries.ferry, ["cache", "set", "k", String(repeating: "x", count: 2000)], environment: env)
        #expect(big.status == 1 && big.err.contains("resource_exhausted"))
        let again = try runCommand(Binaries.ferry, ["daemon", "start", "--memory-limit", "32MiB"], environment: env)
        #expect(again.out.contains("already running") && again.err.contains("its options are unchanged"))
    }
}
}

/// Waits (up to 10 s) until a process that is not our child is gone.
func waitForExit(_ pid: pid_t) {
    for _ in 0..<1000 {
        if kill(pid, 0) != 0 && errno == ESRCH { return }
        usleep(10_000)
    }
}
