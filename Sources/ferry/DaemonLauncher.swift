#if canImport(Glibc)
import Glibc
#endif
import FerryClient
import FerryProtocol

/// The CLI's view of `FerryDaemon` (FerryClient's auto-start): the same calls, with failures as the CLI's exit
/// codes (3: no daemon; 2: a usage problem such as a bad socket path).
struct DaemonLauncher {
    let daemon: FerryDaemon

    init(explicitSocket: String?, daemonArguments: [String] = []) {
        var daemon = FerryDaemon(socket: explicitSocket, clientName: "ferry-cli")
        daemon.daemonArguments = daemonArguments
        self.daemon = daemon
    }

    var daemonArguments: [String] { daemon.daemonArguments }

    var socketPath: String { daemon.socketPath }

    func connect(autostart: Bool = true) async throws(CommandFailure) -> FerryClient {
        do { return try await daemon.connect(autostart: autostart) } catch { throw DaemonLauncher.failure(error) }
    }

    func tryConnect() async throws(CommandFailure) -> FerryClient? {
        do { return try await daemon.tryConnect() } catch { throw DaemonLauncher.failure(error) }
    }

    func start() throws(CommandFailure) -> pid_t {
        do { return try daemon.start() } catch { throw DaemonLauncher.failure(error) }
    }

    func waitUntilReady(spawned pid: pid_t) async throws(CommandFailure) -> FerryClient {
        do { return try await daemon.waitUntilReady(spawned: pid) } catch { throw DaemonLauncher.failure(error) }
    }

    static func failure(_ e: FerryError) -> CommandFailure {
        CommandFailure(code: e.code == .invalidArgument ? .usage : .noDaemon, message: e.message)
    }
}
