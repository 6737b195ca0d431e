#if canImport(Glibc)
import Glibc
#endif
import FerryProtocol

/// Makes the socket path safe to bind: its directory exists with the right owner and mode, no other `ferryd`
/// serves it (an exclusive `flock` on `<path>.lock`, held for the daemon's life), and a stale socket file left by a
/// dead daemon is removed — only while holding that lock, and only when nothing answers on it.
///
/// The lock file is never deleted: unlinking it would let two daemons lock two different inodes of the same name.
struct SocketGuard {
    let path: String
    let lockPath: String
    private let lockFD: Int32

    /// `sharedWith`: the socket is for other users too (`--socket-group`'s gid, or nil with `--allow-other-users`);
    /// a directory made here is then 0750 and that group's (0755 for everyone) instead of 0700, so they can reach it.
    static func acquire(path: String, ownsDirectory: Bool, sharedWith: SocketSharing = .nobody, log: Logger) throws(ServerError) -> SocketGuard {
        if let problem = SocketPath.problem(with: path) { throw .socketPath(problem) }
        try prepareDirectory(of: path, checkOwnership: ownsDirectory, sharing: sharedWith)
        let lockPath = path + ".lock"
        // Never through a symlink (a shared sticky directory could hold one planted by another user), and only a
        // regular file of ours: the lock file is truncated and written.
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 && errno == ELOOP { throw .lock("lock file \(lockPath) is a symbolic link; refusing to follow it") }
        if fd < 0 { throw .lock("cannot open lock file \(lockPath): \(errnoText())") }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_uid == geteuid() else {
            close(fd)
            throw .lock("lock file \(lockPath) is not a regular file of uid \(geteuid()); refusing to use it")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let pid = readPID(fd)
            close(fd)
            throw .alreadyRunning(path: path, pid: pid)
        }
        writePID(fd)
        let guardian = SocketGuard(path: path, lockPath: lockPath, lockFD: fd)
        do {
            try guardian.removeStaleSocket(log: log)
        } catch {
            close(fd)
            throw error
        }
        return guardian
    }

    /// Removes the socket file; the lock is released when the process exits (or here, explicitly).
    func release() {
        unlink(path)
        flock(lockFD, LOCK_UN)
        close(lockFD)
    }

    private static func prepareDirectory(of path: String, checkOwnership: Bool, sharing: SocketSharing) throws(ServerError) {
        guard let slash = path.lastIndex(of: "/") else { return }
        let dir = slash == path.startIndex ? "/" : String(path[..<slash])
        let mode: mode_t
        switch sharing {
        case .nobody: mode = 0o700
        case .group: mode = 0o750
        case .everyone: mode = 0o755
        }
        if mkdir(dir, mode) == 0 {
            // mkdir's mode passes through the umask (077 in the daemon): set it as meant.
            chmod(dir, mode)
            if case .group(let gid) = sharing { chown(dir, uid_t.max, gid_t(gid)) }
        } else if errno != EEXIST {
            throw .directory("cannot create socket directory \(dir): \(errnoText())")
        }
        guard checkOwnership else { return }
        var st = stat()
        guard lstat(dir, &st) == 0 else { throw .directory("cannot inspect \(dir): \(errnoText())") }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw .directory("\(dir) is not a directory") }
        guard st.st_uid == getuid() else {
            throw .directory("socket directory \(dir) belongs to uid \(st.st_uid), not \(getuid()); refusing to use it")
        }
        // Nobody else may write it (replace the socket); others may pass through it when the socket is shared.
        let forbidden: mode_t = sharing == .nobody ? 0o077 : 0o022
        guard st.st_mode & forbidden == 0 else {
            throw .directory("socket directory \(dir) has mode \(String(st.st_mode & 0o777, radix: 8)); it must be \(sharing == .nobody ? "0700" : "0750 or 0755")")
        }
    }

    private func removeStaleSocket(log: Logger) throws(ServerError) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard st.st_mode & S_IFMT == S_IFSOCK else {
            throw .socketPath("\(path) exists and is not a socket; refusing to replace it")
        }
        if SocketGuard.somethingAnswers(at: path) { throw .liveSocket(path: path) }
        unlink(path)
        log.info("removed stale socket \(path)")
    }

    /// Whether a connect to `path` succeeds: a live server, whoever it is.
    static func somethingAnswers(at path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (k, b) in path.utf8.enumerated() where k < p.count - 1 { p[k] = b }
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return rc == 0
    }

    private static func readPID(_ fd: Int32) -> Int32? {
        var buf = [UInt8](repeating: 0, count: 32)
        let n = pread(fd, &buf, 31, 0)
        guard n > 0 else { return nil }
        return Int32(String(decoding: buf[..<n], as: UTF8.self).trimmingCharacters(in: " \n"))
    }

    private static func writePID(_ fd: Int32) {
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, text, text.count, 0)
    }
}

func errnoText() -> String { String(cString: strerror(errno)) }

extension String {
    func trimmingCharacters(in set: String) -> String {
        let chars = Set(set)
        var s = Substring(self)
        while let f = s.first, chars.contains(f) { s.removeFirst() }
        while let l = s.last, chars.contains(l) { s.removeLast() }
        return String(s)
    }
}

/// Who besides the daemon's user may connect, which decides the socket's and its directory's modes.
enum SocketSharing: Equatable {
    case nobody
    /// `--socket-group`: the group's members (socket 0660, that group's).
    case group(UInt32)
    /// `--allow-other-users`: every local user (socket 0666).
    case everyone

    init(_ config: ServerConfig) {
        if let group = config.socketGroup { self = .group(group.gid) } else if config.allowOtherUsers { self = .everyone } else { self = .nobody }
    }
}
