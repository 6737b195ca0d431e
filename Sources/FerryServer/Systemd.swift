#if canImport(Glibc)
import Glibc
#endif

/// The two systemd protocols ferryd speaks, written from their documentation (sd_listen_fds(3), sd_notify(3)) rather
/// than through libsystemd: each is a few lines, and a daemon started by hand needs neither library nor systemd.
///
/// Socket activation: systemd binds the socket (`ferryd.socket`), starts the service on the first connection, and
/// hands the listening descriptor over as fd 3 with `LISTEN_PID` (ours) and `LISTEN_FDS` (1).
/// Notification: with `Type=notify`, systemd waits for `READY=1` on the datagram socket `NOTIFY_SOCKET` before it
/// counts the service as started; `RELOADING=1` and `STOPPING=1` say what the daemon is doing.
///
/// ```swift
/// let fd = Systemd.listenDescriptor(environment: env, pid: getpid())   // 3 under socket activation, else nil
/// let notifier = SystemdNotifier(environment: env)                      // nil outside a Type=notify service
/// notifier?.send("READY=1\nSTATUS=listening")
/// ```
public enum Systemd {
    /// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: Int32 = 3

    /// The listening socket passed by systemd, when the variables are for this process and name exactly one.
    /// (ferryd serves one socket; two or more is a unit mistake, refused by the caller.)
    public static func listenDescriptor(environment: (String) -> String?, pid: Int32) -> Result<Int32?, ServerError> {
        guard let pidText = environment("LISTEN_PID"), let fdsText = environment("LISTEN_FDS") else { return .success(nil) }
        // Meant for another process (a parent that did not unset them): not ours.
        guard Int32(pidText) == pid else { return .success(nil) }
        guard let count = Int(fdsText), count >= 1 else { return .success(nil) }
        guard count == 1 else {
            return .failure(.socketPath("systemd passed \(count) sockets (LISTEN_FDS); ferryd serves exactly one: give ferryd.socket one ListenStream"))
        }
        return .success(firstDescriptor)
    }

    /// Checks the passed descriptor is a listening Unix stream socket, and returns its path (for the log, stats and
    /// the lock file beside it).
    public static func socketPath(of fd: Int32) -> Result<String, ServerError> {
        var type: Int32 = 0, listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0, type == Int32(SOCK_STREAM.rawValue) else {
            return .failure(.socketPath("the descriptor systemd passed (fd \(fd)) is not a stream socket"))
        }
        length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening != 0 else {
            return .failure(.socketPath("the socket systemd passed (fd \(fd)) is not listening (Accept=no is needed)"))
        }
        var address = sockaddr_un()
        length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0, address.sun_family == sa_family_t(AF_UNIX) else {
            return .failure(.socketPath("the socket systemd passed (fd \(fd)) is not a Unix socket"))
        }
        let path = withUnsafeBytes(of: address.sun_path) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard path.hasPrefix("/") else { return .failure(.socketPath("the socket systemd passed has no path in the file system")) }
        return .success(path)
    }
}

/// `sd_notify`: one datagram per message to `NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace).
public final class SystemdNotifier: Sendable {
    private let address: [UInt8]

    /// Nil when not started by systemd as a `Type=notify` service.
    public init?(environment: (String) -> String?) {
        guard let target = environment("NOTIFY_SOCKET"), target.count > 1, target.utf8.count < 108,
              target.hasPrefix("/") || target.hasPrefix("@") else { return nil }
        var bytes = Array(target.utf8)
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }   // abstract namespace
        address = bytes
    }

    /// Sends `message` (lines `KEY=value`); best effort, as sd_notify: a daemon runs on whether systemd heard.
    @discardableResult
    public func send(_ message: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var sa = sockaddr_un()
        sa.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &sa.sun_path) { p in for (k, b) in address.enumerated() { p[k] = b } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + address.count)
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), $0, length) }
        }
        return sent == bytes.count
    }

    /// `MONOTONIC_USEC` for `RELOADING=1` (systemd 253's `Type=notify-reload` asks for it; older ones ignore it).
    public static func monotonicMicroseconds() -> UInt64 { LatencyHistogram.now() / 1000 }
}
