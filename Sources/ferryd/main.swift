#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryServer

/// ferryd: parse flags, run the server, map failures to exit codes (0 clean stop, 1 could not start, 2 usage or
/// configuration, 3 another daemon has the socket).
func writeStderr(_ s: String) {
    var line = s + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

do {
    let args = try DaemonOptions.parser.parse(Array(CommandLine.arguments.dropFirst()))
    if args.has("help") {
        print(DaemonOptions.usage)
        exit(0)
    }
    if let shell = args.value("completions") {
        guard let which = Completions.Shell(rawValue: shell) else { throw UsageError("--completions takes bash, zsh or fish") }
        print(Completions(program: "ferryd", options: DaemonOptions.parser.options).render(which), terminator: "")
        exit(0)
    }
    if args.has("version") {
        print("ferryd \(ferryVersion)")
        exit(0)
    }
    let settings = try DaemonOptions.settings(args, environment: DaemonOptions.environment, uid: getuid(), read: DaemonOptions.readFile)
    var config = try DaemonOptions.config(from: settings)
    // Socket activation: systemd bound the socket and passes it as fd 3; its path replaces --socket.
    switch Systemd.listenDescriptor(environment: DaemonOptions.environment, pid: getpid()) {
    case .success(let fd?):
        switch Systemd.socketPath(of: fd) {
        case .success(let path):
            config.inheritedListener = fd
            config.socketPath = path
            config.socketIsDefault = false
        case .failure(let error): throw UsageError("\(error)")
        }
    case .success(nil): break
    case .failure(let error): throw UsageError("\(error)")
    }
    // Not for processes this one may start.
    for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
    if args.has("print-config") {
        let file = DaemonOptions.configFile(args, environment: DaemonOptions.environment, uid: getuid())
        print(DaemonOptions.printed(settings, config, file: file.map { ($0.path, access($0.path, R_OK) == 0) }))
        exit(0)
    }
    let server = Server(config: config)
    server.notifier = SystemdNotifier(environment: DaemonOptions.environment)
    // SIGHUP reads the same layers again: the file, the environment, and the flags this daemon started with.
    server.reload = { () throws(ReloadError) -> ServerConfig in
        do {
            let again = try DaemonOptions.settings(args, environment: DaemonOptions.environment, uid: getuid(), read: DaemonOptions.readFile)
            return try DaemonOptions.config(from: again)
        } catch {
            throw ReloadError("\(error)")
        }
    }
    do {
        try server.run()
    } catch {
        writeStderr("ferryd: \(error)")
        // 3: another daemon has the socket (a client that started this one waits for that one instead).
        switch error {
        case .alreadyRunning, .liveSocket: exit(3)
        default: exit(1)
        }
    }
} catch {
    writeStderr("ferryd: \(error) (ferryd --help lists every option)")
    exit(2)
}
