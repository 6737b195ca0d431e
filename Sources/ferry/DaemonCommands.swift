#if canImport(Glibc)
import Glibc
#endif
import FerryClient
import FerryProtocol

/// `ferry daemon start|stop|status`.
struct DaemonCommands {
    let launcher: DaemonLauncher

    func run(_ action: String?) async throws(CommandFailure) {
        switch action {
        case "start": try await start()
        case "stop": try await stop()
        case "status": try await status()
        default: throw CommandFailure(code: .usage, message: "usage: ferry daemon start|stop|status")
        }
    }

    private func start() async throws(CommandFailure) {
        if let client = try await launcher.tryConnect() {
            let pid = (try? await client.stats())?["pid"]?.intValue ?? 0
            client.close()
            print("ferryd is already running on \(launcher.socketPath) (pid \(pid))")
            if !launcher.daemonArguments.isEmpty {
                writeStderr("ferry: its options are unchanged; to start it with \(launcher.daemonArguments.joined(separator: " ")): ferry daemon stop, then start")
            }
            return
        }
        let client = try await launcher.waitUntilReady(spawned: try launcher.start())
        defer { client.close() }
        let pid = (try? await client.stats())?["pid"]?.intValue ?? 0
        print("ferryd started on \(launcher.socketPath) (pid \(pid))")
    }

    /// SIGTERM to the pid the daemon reports, then waits until the socket stops answering.
    private func stop() async throws(CommandFailure) {
        guard let client = try await launcher.tryConnect() else {
            print("ferryd is not running on \(launcher.socketPath)")
            return
        }
        let stats = try? await client.stats()
        client.close()
        guard let pid = stats?["pid"]?.intValue, pid > 0 else {
            throw CommandFailure(code: .operationFailed, message: "ferryd did not report its pid")
        }
        guard kill(pid_t(pid), SIGTERM) == 0 else {
            throw CommandFailure(code: .operationFailed, message: "cannot signal pid \(pid): \(String(cString: strerror(errno)))")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(15)
        while clock.now < deadline {
            if kill(pid_t(pid), 0) != 0 && errno == ESRCH {
                print("ferryd stopped (pid \(pid))")
                return
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        throw CommandFailure(code: .operationFailed, message: "ferryd (pid \(pid)) is still running after 15 s")
    }

    private func status() async throws(CommandFailure) {
        guard let client = try await launcher.tryConnect() else {
            throw CommandFailure(code: .noDaemon, message: "ferryd is not running on \(launcher.socketPath)")
        }
        defer { client.close() }
        let s: JSONObject
        do { s = try await client.stats() } catch { throw CommandFailure(code: .operationFailed, message: "\(error)") }
        print("ferryd \(s["version"]?.stringValue ?? "?") running on \(launcher.socketPath)")
        print(Commands.formatStats(s))
    }
}
