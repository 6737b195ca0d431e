import Foundation
import Testing
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The `ferry` executable: output, exit codes, auto-start.
extension IntegrationTests {
@Suite struct CLITests {
    func ferry(_ args: [String], socket: String, env: [String: String] = [:], stdin: Data? = nil) throws -> (status: Int32, out: String, err: String) {
        try runCommand(Binaries.ferry, args, environment: ["FERRY_SOCKET": socket].merging(env) { $1 }, stdin: stdin)
    }

    /// `ferry fetch -o FILE` writes the body as it arrives (before, the CLI held it whole), and a failed download
    /// leaves no file and replaces none.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/time")))
    func fetchToAFileStreamsAndNeverLeavesAPartialFile() throws {
        let origin = try OriginServer()
        defer { origin.stop() }
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = TempDir()
        defer { dir.remove() }
        let size = 30_000_000  // held whole, as before, it made the CLI peak at about 70 MB
        let out = dir.path + "/big.bin"
        let run = try runCommand("/usr/bin/time", ["-f", "maxrss=%M", Binaries.ferry, "fetch", "-s", origin.url("/r?size=\(size)&cc=no-store"), "-o", out],
                                 environment: ["FERRY_SOCKET": daemon.socket])
        #expect(run.status == 0, "\(run.err)")
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: out)))
        // The origin's body of size=N is the bytes i % 251.
        let firstWrong = written.withUnsafeBufferPointer { b in (0..<b.count).first { b[$0] != UInt8($0 % 251) } }
        #expect(written.count == size && firstWrong == nil, "\(written.count) bytes, first wrong at \(String(describing: firstWrong))")
        let maxRSS = Int(run.err.components(separatedBy: "maxrss=").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? -1
        #expect(maxRSS > 0 && maxRSS < 24 * 1024, "the CLI peaked at \(maxRSS) KiB for a \(size)-byte body")

        // To stdout, without -i or -f, the body goes out as it arrives too.
        let piped = try runCommand("/usr/bin/time", ["-f", "maxrss=%M", Binaries.ferry, "fetch", "-s", origin.url("/r?size=\(size)&cc=no-store")],
                                   environment: ["FERRY_SOCKET": daemon.socket])
        let pipedRSS = Int(piped.err.components(separatedBy: "maxrss=").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? -1
        #expect(piped.status == 0 && pipedRSS > 0 && pipedRSS < 24 * 1024, "to stdout the CLI peaked at \(pipedRSS) KiB")

        // -f and a 404: exit 22, the existing file untouched, nothing left beside it.
        let failed = try ferry(["fetch", "-s", "-f", origin.url("/r?status=404&body=gone"), "-o", out], socket: daemon.socket)
        #expect(failed.status == 22, "\(failed)")
        #expect((try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int) == size, "an existing file is not replaced")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["big.bin"], "no partial file left")
    }

    @Test func commandsAgainstARunningDaemon() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let s = daemon.socket
        let ping = try ferry(["ping", "-c", "2"], socket: s)
        #expect(ping.status == 0)
        #expect(ping.out.components(separatedBy: "pong from ferryd").count == 3, "\(ping.out)")
        #expect(ping.out.contains(" ms"))

        let stats = try ferry(["stats", "--json"], socket: s)
        #expect(stats.status == 0)
        let parsed = try JSONParser.parse(Array(stats.out.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
        #expect(parsed["pid"]?.intValue == Int64(daemon.pid))
        #expect(try ferry(["stats"], socket: s).out.contains("connections:"))

        let describe = try ferry(["describe"], socket: s)
        #expect(describe.status == 0 && describe.out.contains("cancel") && describe.out.contains("delay_ms"))

        let call = try ferry(["call", "ping", #"{"events":2}"#], socket: s)
        #expect(call.status == 0)
        #expect(call.out == "{\"pong\":true}\n")
        let fromStdin = try ferry(["call", "ping", "-"], socket: s, stdin: Data(#"{"delay_ms":1}"#.utf8))
        #expect(fromStdin.out == "{\"pong\":true}\n")
        // A body in, a body out, byte for byte.
        let dir = TempDir()
        defer { dir.remove() }
        let payload = Data((0...255).map { UInt8($0) })
        _ = FileManager.default.createFile(atPath: dir.path + "/in", contents: payload)
        let echoed = try ferry(["call", "ping", "--body", dir.path + "/in", "-o", dir.path + "/out"], socket: s)
        #expect(echoed.status == 0)
        #expect(FileManager.default.contents(atPath: dir.path + "/out") == payload)
    }

    @Test func exitCodes() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let s = daemon.socket
        let failed = try ferry(["call", "nope"], socket: s)
        #expect(failed.status == 1)
        #expect(failed.err.contains("unimplemented"), "\(failed.err)")
        let timedOut = try ferry(["call", "ping", #"{"delay_ms":2000}"#, "--timeout", "50ms"], socket: s)
        #expect(timedOut.status == 1 && timedOut.err.contains("deadline_exceeded"))
        #expect(try ferry(["frobnicate"], socket: s).status == 2)
        #expect(try ferry(["call", "ping", "{bad"], socket: s).status == 2)
        #expect(try ferry(["ping", "--count"], socket: s).status == 2)
        #expect(try ferry([], socket: s).status == 2)
        for sub in ["ping", "describe", "stats", "call", "daemon"] {
            let help = try ferry([sub, "--help"], socket: s)
            #expect(help.status == 0 && help.out.contains("Usage: ferry \(sub)"), "\(sub)")
        }
        let dir = TempDir()
        defer { dir.remove() }
        let none = try ferry(["ping"], socket: dir.path + "/none.sock", env: ["FERRY_NO_AUTOSTART": "1"])
        #expect(none.status == 3)
        #expect(none.err.contains("no ferryd"), "\(none.err)")
    }

    /// Processes whose executable is ferryd and whose environment names `socket`: the daemons a test auto-started.
    func daemons(on socket: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"),
                  exe.hasSuffix("/ferryd"),
                  let env = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            return String(decoding: env, as: UTF8.self).contains("FERRY_SOCKET=\(socket)\u{0}")
        }
    }

    func stopDaemons(on socket: String) {
        for pid in daemons(on: socket) {
            kill(pid, SIGTERM)
            for _ in 0..<500 where kill(pid, 0) == 0 { usleep(10_000) }
        }
    }

    @Test func autostartFromColdAndDaemonControl() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let s = dir.path + "/auto.sock"
        defer { stopDaemons(on: s) }
        let ping = try ferry(["ping"], socket: s)
        #expect(ping.status == 0, "\(ping.err)")
        #expect(daemons(on: s).count == 1)
        let status = try ferry(["daemon", "status"], socket: s)
        #expect(status.status == 0 && status.out.contains("running"))
        #expect(try ferry(["daemon", "start"], socket: s).out.contains("already running"))
        let stop = try ferry(["daemon", "stop"], socket: s)
        #expect(stop.status == 0 && stop.out.contains("stopped"), "\(stop.out)\(stop.err)")
        #expect(daemons(on: s).isEmpty)
        #expect(try ferry(["daemon", "status"], socket: s).status == 3)
        let start = try ferry(["daemon", "start"], socket: s)
        #expect(start.status == 0 && start.out.contains("started"), "\(start.err)")
        #expect(daemons(on: s).count == 1)
    }

    @Test func concurrentAutostartsEndWithExactlyOneDaemon() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let s = dir.path + "/race.sock"
        defer { stopDaemons(on: s) }
        // Eight CLIs at the same moment, none finding a daemon: all must succeed through one daemon.
        let processes = try (0..<8).map { _ in try Subprocess(Binaries.ferry, ["ping"], environment: ["FERRY_SOCKET": s]) }
        #expect(processes.map { $0.wait(timeout: 30) } == Array(repeating: 0, count: 8))
        // Daemons that lost the race exit on their own once they find the lock taken; one still loading its
        // libraries when the last CLI finished may take a moment.
        var running = daemons(on: s)
        for _ in 0..<200 where running.count > 1 {
            usleep(25_000)
            running = daemons(on: s)
        }
        #expect(running.count == 1)
    }
}
}
