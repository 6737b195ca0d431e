#if os(Linux)
import Glibc

/// What FerryClient asks of the operating system that differs between platforms, for Linux (glibc). Everything
/// else in the target is POSIX. A port to Darwin is one file beside this one, `Platform+Darwin.swift`, giving the
/// same names (there: `SO_NOSIGPIPE` set on the socket for `MSG_NOSIGNAL`, `fcntl(FD_CLOEXEC)` for
/// `SOCK_CLOEXEC`, `proc_pidinfo`/`_NSGetExecutablePath` for `/proc/self`, `POSIX_SPAWN_CLOEXEC_DEFAULT` for the
/// descriptor scan), plus the `#ifdef`s in CFerryIO's `ferry_io.c`.
///
/// ```swift
/// let fd = Platform.streamSocket()                 // AF_UNIX, SOCK_STREAM, close-on-exec
/// Platform.send(fd, pointer, count)                // never raises SIGPIPE
/// ```
enum Platform {
    /// A Unix stream socket, closed on exec; -1 with errno on failure.
    static func streamSocket() -> Int32 {
        socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
        Glibc.connect(fd, address, length)
    }

    /// `send` that returns EPIPE instead of raising SIGPIPE when the daemon is gone.
    static func send(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        Glibc.send(fd, bytes, count, Int32(MSG_NOSIGNAL))
    }

    /// `send` that never waits for room in the socket (EAGAIN instead).
    static func sendNow(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        Glibc.send(fd, bytes, count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// A monotonic clock's nanoseconds (the reader thread's `ReadBaton` turns).
    static func monotonicNanos() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }

    /// Starts a detached thread running `body` (no Foundation: it would add milliseconds to every CLI start).
    static func startThread(_ body: @escaping @Sendable () -> Void) {
        final class Box: @unchecked Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let arg = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, arg)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        pthread_detach(thread)
    }

    /// This program's executable, for finding `ferryd` beside it.
    static func executablePath() -> String? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buf[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Open descriptors above 2 without close-on-exec (e.g. a pipe our own parent passed down). glibc's
    /// `posix_spawn_file_actions_addclosefrom_np` would do this, but Swift's Glibc module does not export it.
    static func inheritableDescriptors() -> [Int32] {
        guard let dir = opendir("/proc/self/fd") else { return [] }
        var fds: [Int32] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let fd = Int32(name), fd > 2 { fds.append(fd) }
        }
        closedir(dir)
        return fds.filter { fd in
            let flags = fcntl(fd, F_GETFD)
            return flags >= 0 && flags & FD_CLOEXEC == 0
        }
    }

    /// Spawns `executable` with `arguments` (argv[0] included) in a session of its own (a terminal's Ctrl-C or
    /// hang-up does not reach it), stdin and stdout on /dev/null, stderr on `stderr`, a clean signal state, and
    /// none of our other descriptors. Returns the pid, or throws the error number.
    static func spawnDetached(_ executable: String, _ arguments: [String], stderr: Int32) throws(SpawnError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // Nothing else of ours leaks into the long-lived daemon (a parent waiting for EOF on a pipe would hang).
        for fd in inheritableDescriptors() { posix_spawn_file_actions_addclose(&actions, fd) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A clean signal state: the async runtime's threads may block signals, and a blocked SIGTERM would make
        // the daemon unstoppable.
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGINT, SIGTERM, SIGPIPE, SIGHUP] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(spawnSetSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let cArgs = arguments.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        let rc = posix_spawn(&pid, executable, &actions, &attributes, cArgs, environ)
        guard rc == 0 else { throw SpawnError(code: rc) }
        return pid
    }

    struct SpawnError: Error { let code: Int32 }

    /// glibc's POSIX_SPAWN_SETSID (not exported to Swift).
    static let spawnSetSID: Int32 = 0x80
}
#endif
