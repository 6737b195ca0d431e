/// Where the daemon listens and clients connect, resolved the same way by both (PROTOCOL.md section 1).
///
/// ```swift
/// SocketPath.resolve(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], uid: 1000)
/// // "/run/user/1000/ferry/ferryd.sock"
/// ```
public enum SocketPath {
    /// The longest path a Unix socket address holds on Linux (`sun_path` is 108 bytes with its NUL).
    public static let maxLength = 107

    /// `environment` looks a variable up (`getenv` in a process, a dictionary in tests).
    public static func resolve(explicit: String? = nil, environment: (String) -> String?, uid: UInt32) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let s = environment("FERRY_SOCKET"), !s.isEmpty { return s }
        return defaultDirectory(environment: environment, uid: uid) + "/ferryd.sock"
    }

    public static func resolve(explicit: String? = nil, environment: [String: String], uid: UInt32) -> String {
        resolve(explicit: explicit, environment: { environment[$0] }, uid: uid)
    }

    /// Whether `resolve` ends at the default path (no flag, no `FERRY_SOCKET`): the daemon then owns the directory.
    public static func isDefault(explicit: String?, environment: (String) -> String?) -> Bool {
        (explicit ?? "").isEmpty && (environment("FERRY_SOCKET") ?? "").isEmpty
    }

    /// The directory of the default socket, which the daemon creates with mode 0700.
    public static func defaultDirectory(environment: (String) -> String?, uid: UInt32) -> String {
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty { return runtime + "/ferry" }
        return "/tmp/ferry-\(uid)"
    }

    /// The cache directory default: `$XDG_CACHE_HOME/ferry`, else `~/.cache/ferry`.
    public static func defaultCacheDirectory(environment: (String) -> String?) -> String {
        if let c = environment("XDG_CACHE_HOME"), !c.isEmpty { return c + "/ferry" }
        return (environment("HOME") ?? "/tmp") + "/.cache/ferry"
    }

    /// A clear message when `path` cannot be a socket address, else `nil`.
    public static func problem(with path: String) -> String? {
        let n = path.utf8.count
        if n == 0 { return "the socket path is empty" }
        if n > maxLength {
            return "socket path is \(n) bytes long; Unix sockets allow at most \(maxLength): \(path)"
        }
        return nil
    }
}
