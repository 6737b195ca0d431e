#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryClient

/// The commands that make one short exchange with a running daemon (`ping`; `cache get`, `set` with its value
/// given, `del`, `exists`, `ttl`, `touch`, `incr`, `decr`: `CacheCommands.isQuick`), run in the main thread through a
/// `BlockingConnection`, without starting the concurrency runtime. Why: a shell script pays a CLI's whole start-up
/// on every call, and the runtime's threads and a call's watchdog timer were a fifth of `ferry ping`'s
/// (BENCHMARKS.md, start-up). Each prints and exits exactly as its general form in `Commands` does
/// (`QuickCommandTests` runs both and compares); when no daemon answers, the general form runs instead, because
/// it starts one.
///
/// ```swift
/// if let code = QuickCommands(args: args, launcher: launcher).run() { exit(code) }   // nil: not a quick one
/// ```
struct QuickCommands {
    let args: ParsedArgs
    let launcher: DaemonLauncher

    /// Whether `args` names a quick command (with options it takes as they are).
    var applies: Bool {
        // Tests run both forms of a command and compare what they print.
        if let off = getenv("FERRY_CLI_QUICK"), String(cString: off) == "0" { return false }
        switch args.positionals.first {
        case "ping":
            guard args.positionals.count == 1 else { return false }
            guard let count = args.value("count") else { return true }
            return Int(count).map { $0 > 0 } ?? false  // a bad --count: the general form says why
        case "cache":
            return CacheCommands.isQuick(Array(args.positionals.dropFirst()))
        default:
            return false
        }
    }

    /// The exit code, or nil when the general form must run the command (not a quick one, or no daemon answers).
    func run() -> Int32? {
        guard applies, let connection = try? BlockingConnection(path: launcher.socketPath, clientName: "ferry-cli") else {
            return nil
        }
        defer { connection.close() }
        do throws(CommandFailure) {
            if args.positionals.first == "ping" {
                try ping(connection)
            } else {
                try CacheCommands(args: args, commands: Commands(args: args, launcher: launcher)).runQuick(connection)
            }
        } catch {
            return error.report()
        }
        return 0
    }

    /// `Commands.ping`.
    private func ping(_ connection: BlockingConnection) throws(CommandFailure) {
        let count = args.value("count").flatMap { Int($0) } ?? 1
        for _ in 0..<count {
            do { print(Commands.pong(from: connection.serverName, after: try connection.ping())) } catch { throw CommandFailure(error) }
        }
    }
}
