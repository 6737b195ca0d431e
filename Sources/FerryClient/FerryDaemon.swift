#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FerryProtocol

/// Finds a running `ferryd` or starts one, as sccache and watchman start theirs: the CLI's auto-start, and
/// `FerryClient.connect(autostart: true)`'s. `FERRY_NO_AUTOSTART=1` turns it off.
///
/// When several clients start at once, each may spawn a daemon; the daemons race for the socket's lock file, exactly
/// one wins, the others exit at once ("already running"), and every client waits until the winner answers.
///
/// ```swift
/// let client = try await FerryDaemon().connect()            // starts ferryd in the background if none answers
/// let client = try await FerryClient.connect(autostart: true)
/// ```
public struct FerryDaemon: Sendable {
    /// The socket asked for (nil: the daemon resolves the default itself, as the client does).
    public var explicitSocket: String?
    public var readyTimeoutMs: Int64 = 10_000
    /// The name the connections give in `hello`.
    public var clientName: String
    /// More of `ferryd`'s options for a daemon started here (`--cache-dir`, `--memory-limit`, …).
    public var daemonArguments: [String] = []

    public init(socket: String? = nil, clientName: String = "swift") {
        explicitSocket = socket
        self.clientName = clientName
    }

    public var socketPath: String { explicitSocket ?? FerryClient.defaultSocketPath }

    public static var autostartDisabled: Bool {
        guard let v = getenv("FERRY_NO_AUTOSTART") else { return false }
        let s = String(cString: v)
        return !s.isEmpty && s != "0"
    }

    /// Connects, starting the daemon first when none answers (unless `autostart` is false or disabled).
    public func connect(autostart: Bool = true) async throws(FerryError) -> FerryClient {
        if let client = try await tryConnect() { return client }
        guard autostart && !FerryDaemon.autostartDisabled else {
            throw FerryError.connection("no ferryd answers on \(socketPath)" +
                                        (FerryDaemon.autostartDisabled ? " (FERRY_NO_AUTOSTART is set)" : ""))
        }
        return try await waitUntilReady(spawned: try start())
    }

    /// One connection attempt: nil when nothing listens, an error for anything else.
    public func tryConnect() async throws(FerryError) -> FerryClient? {
        do {
            return try await FerryClient.connect(path: socketPath, clientName: clientName)
        } catch let e as FerryError where e.code == .unavailable {
            return nil
        } catch let e as FerryError {
            throw e
        } catch {
            throw FerryError.connection("\(error)")
        }
    }

    /// Spawns `ferryd` in its own session, detached from the terminal, its log appended next to the socket.
    public func start() throws(FerryError) -> pid_t {
        guard let daemon = FerryDaemon.findDaemonExecutable() else {
            throw FerryError.connection("cannot find the ferryd executable next to this program or on PATH")
        }
        var args = [daemon]
        if let explicitSocket { args += ["--socket", explicitSocket] }
        args += daemonArguments
        let logPath = FerryDaemon.logPath(forSocket: socketPath)
        ensureDirectory(of: socketPath)
        let log = try FerryDaemon.openLog(logPath)
        defer { close(log) }

        do {
            return try Platform.spawnDetached(daemon, args, stderr: log)
        } catch {
            throw FerryError.connection("cannot start \(daemon): \(String(cString: strerror(error.code)))")
        }
    }

    /// Polls until the daemon answers `hello`, up to `readyTimeoutMs`.
    ///
    /// The daemon we spawned may exit at once: it lost the start race to another CLI's daemon (which will answer),
    /// or an old daemon was still draining and held the lock (and will be gone soon). Either way, while nothing
    /// answers, spawn again after a short pause, a few times at most.
    public func waitUntilReady(spawned first: pid_t) async throws(FerryError) -> FerryClient {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(readyTimeoutMs)
        var child: pid_t? = first
        var respawns = 0
        while clock.now < deadline {
            if let client = try await tryConnect() { return client }
            if let pid = child, let status = FerryDaemon.exitStatus(pid) {
                child = nil
                // Anything but "another daemon has the socket" will not get better by waiting: say why, now.
                guard status == FerryDaemon.alreadyRunningStatus else {
                    let why = FerryDaemon.lastLogLine(FerryDaemon.logPath(forSocket: socketPath)) ?? "no reason in its log"
                    throw FerryError.connection("ferryd exited at once (status \(status)): \(why)")
                }
                if respawns < 5 {
                    respawns += 1
                    try? await Task.sleep(for: .milliseconds(100 * respawns))
                    if let client = try await tryConnect() { return client }
                    child = try start()
                }
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        throw FerryError.connection("ferryd did not answer on \(socketPath) within \(readyTimeoutMs / 1000) s; see \(FerryDaemon.logPath(forSocket: socketPath))")
    }

    /// ferryd's exit status when another daemon holds its socket (it lost a start race, or one was draining).
    public static let alreadyRunningStatus: Int32 = 3

    /// The exit status of `pid` if it has exited (reaped, so it leaves no zombie); nil while it runs.
    static func exitStatus(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        // WIFEXITED / WEXITSTATUS, which Swift's Glibc module does not export: a signal's death is 128 + signal.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + status & 0x7f
    }

    /// The daemon's last word in its log: the last line it wrote as `ferryd: …` (else the last line).
    static func lastLogLine(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let size = lseek(fd, 0, SEEK_END)
        let start = max(0, size - 8192)
        var buffer = [UInt8](repeating: 0, count: Int(size - start))
        guard pread(fd, &buffer, buffer.count, start) == buffer.count else { return nil }
        let lines = String(decoding: buffer, as: UTF8.self).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        return lines.last { $0.hasPrefix("ferryd: ") } ?? lines.last
    }


    /// The socket's directory must exist for the log file; ferryd checks its mode and owner itself.
    private func ensureDirectory(of path: String) {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        mkdir(String(path[..<slash]), 0o700)
    }

    /// The daemon's log, opened here so that it is never a symlink (a shared directory could hold one planted by
    /// another user) and always a regular file of ours.
    static func openLog(_ path: String) throws(FerryError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 && errno == ELOOP {
            throw FerryError.connection("\(path) is a symbolic link; refusing to write ferryd's log through it")
        }
        guard fd >= 0 else { throw FerryError.connection("cannot open \(path): \(String(cString: strerror(errno)))") }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_uid == geteuid() else {
            close(fd)
            throw FerryError.connection("\(path) is not a regular file of uid \(geteuid()); refusing to write ferryd's log to it")
        }
        return fd
    }

    public static func logPath(forSocket socket: String) -> String {
        guard let slash = socket.lastIndex(of: "/") else { return "ferryd.log" }
        return String(socket[..<slash]) + "/ferryd.log"
    }

    /// `ferryd` beside this executable (how `swift build` and installs lay them out), else on PATH.
    public static func findDaemonExecutable() -> String? {
        if let exe = Platform.executablePath() {
            if let slash = exe.lastIndex(of: "/") {
                let candidate = String(exe[..<slash]) + "/ferryd"
                if access(candidate, X_OK) == 0 { return candidate }
            }
        }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/ferryd"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
