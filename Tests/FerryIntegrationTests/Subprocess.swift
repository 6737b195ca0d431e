import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with posix_spawn and reaped with waitpid. (Foundation's `Process` on Linux sometimes
/// missed the exit of a child that had itself spawned a daemon, and a test must stop what it starts by PID.)
final class Subprocess: @unchecked Sendable {
    let pid: pid_t
    private var status: Int32?

    /// - Parameters: stdin/stdout/stderr are file paths (opened for the child) or nil for /dev/null.
    init(_ path: String, _ args: [String], environment: [String: String] = [:], stdin: String? = nil,
         stdout: String? = nil, stderr: String? = nil) throws {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "FERRY_SOCKET")
        for (k, v) in environment { env[k] = v }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let argv = ([path] + args).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // The test runner's threads may block signals; a child inherits that mask, and a Python origin with SIGTERM
        // blocked would ignore the test's stop. Every child starts with nothing blocked and default handlers.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        for sig in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw HarnessError("posix_spawn \(path): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// The exit status (128+signal when killed) once the process has ended; nil while it runs.
    func poll() -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        let signal = raw & 0x7F
        status = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
        return status
    }

    var isRunning: Bool { poll() == nil }

    func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let s = poll() { return s }
            usleep(5_000)
        }
        return poll()
    }

    /// Sends `signal`, waits, and kills for good when it does not exit.
    func stop(signal: Int32 = SIGTERM, timeout: Double = 12) {
        guard isRunning else { return }
        kill(pid, signal)
        if wait(timeout: timeout) == nil {
            kill(pid, SIGKILL)
            _ = wait(timeout: 5)
        }
    }
}

/// Runs a command to completion; returns exit status, stdout and stderr.
@discardableResult
func runCommand(_ path: String, _ args: [String], environment: [String: String] = [:], stdin: Data? = nil,
                timeout: Double = 30) throws -> (status: Int32, out: String, err: String) {
    let dir = TempDir()
    defer { dir.remove() }
    let inPath = dir.path + "/in", outPath = dir.path + "/out", errPath = dir.path + "/err"
    _ = FileManager.default.createFile(atPath: inPath, contents: stdin ?? Data())
    let p = try Subprocess(path, args, environment: environment, stdin: inPath, stdout: outPath, stderr: errPath)
    guard let status = p.wait(timeout: timeout) else {
        p.stop(signal: SIGKILL)
        throw HarnessError("\(path) \(args) did not finish within \(timeout) s")
    }
    let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    return (status, out, err)
}
