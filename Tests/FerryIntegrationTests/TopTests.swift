import Foundation
import Testing
import FerryClient

/// `ferry top` under a real terminal (tmux): it draws rates, hit ratios and budget bars, cuts every line to a narrow
/// window, quits on `q`; without a terminal it prints one line a second.
extension IntegrationTests {
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux")))
struct TopTests {
    static func tmux(_ server: String, _ args: [String]) throws -> (status: Int32, out: String, err: String) {
        try runCommand("/usr/bin/tmux", ["-L", server, "-f", "/dev/null"] + args)
    }

    @Test func topDrawsQuitsAndFitsANarrowTerminal() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let server = "ferry-top-\(getpid())"
        defer { _ = try? Self.tmux(server, ["kill-server"]) }
        let started = try Self.tmux(server, ["new-session", "-d", "-s", "top", "-x", "100", "-y", "30",
                                             "-e", "FERRY_SOCKET=\(daemon.socket)", "-e", "FERRY_NO_AUTOSTART=1", Binaries.ferry + " top"])
        #expect(started.status == 0, "\(started.err)")
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        try await client.cacheSet("k", [1])
        var screen = ""
        for _ in 0..<30 {
            for _ in 0..<200 { _ = try await client.cacheGet("k") }
            try await Task.sleep(for: .milliseconds(100))
            screen = try Self.tmux(server, ["capture-pane", "-p", "-t", "top"]).out
            if screen.contains("cache.get") { break }
        }
        #expect(screen.contains("ferryd 0.1.0 · pid \(daemon.pid)") && screen.contains("q quits"), "\(screen)")
        #expect(screen.contains("requests/s") && screen.contains("cache.get") && screen.contains("cache 100.0%"), "\(screen)")
        #expect(screen.contains("memory      [") && screen.contains("disk        [") && screen.contains("transfers   0 active"))

        _ = try Self.tmux(server, ["resize-window", "-t", "top", "-x", "40", "-y", "20"])
        try await Task.sleep(for: .milliseconds(1500))
        let narrow = try Self.tmux(server, ["capture-pane", "-p", "-t", "top"]).out
        let lines = narrow.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.allSatisfy { $0.count <= 40 } && narrow.contains("…"), "cut to 40 columns: \(narrow)")
        #expect(lines.first?.hasPrefix("ferryd 0.1.0") == true, "the header is still the first line: \(narrow)")

        _ = try Self.tmux(server, ["send-keys", "-t", "top", "q"])
        var alive = true
        for _ in 0..<40 where alive {
            try await Task.sleep(for: .milliseconds(50))
            alive = try Self.tmux(server, ["has-session", "-t", "top"]).status == 0
        }
        #expect(!alive, "q quits (the pane's command ended)")
    }

    @Test func withoutATerminalOneLineASecond() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try runCommand("/usr/bin/timeout", ["2.6", Binaries.ferry, "top"], environment: ["FERRY_SOCKET": daemon.socket])
        let lines = r.out.split(separator: "\n")
        #expect((2...4).contains(lines.count) && lines.allSatisfy { $0.contains(" req/s=") && $0.contains(" mem=") }, "\(r.out)")
        #expect(!r.out.contains("\u{1b}["), "no terminal codes in a pipe")
    }
}
}
