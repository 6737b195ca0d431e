/// Why `ferryd` could not start. Each message says what to do about it.
public enum ServerError: Error, Sendable, CustomStringConvertible {
    case socketPath(String)
    case directory(String)
    case alreadyRunning(path: String, pid: Int32?)
    case liveSocket(path: String)
    case lock(String)
    case bind(path: String, message: String)
    case loop(String)
    case store(String)

    public var description: String {
        switch self {
        case .socketPath(let m): return m
        case .directory(let m): return m
        case .alreadyRunning(let path, let pid):
            return "ferryd is already running on \(path)" + (pid.map { " (pid \($0))" } ?? "")
        case .liveSocket(let path):
            return "a server is answering on \(path) but holds no ferryd lock; refusing to remove it"
        case .lock(let m): return m
        case .bind(let path, let m): return "cannot listen on \(path): \(m)"
        case .loop(let m): return "event loop: \(m)"
        case .store(let m): return m
        }
    }
}

/// A configuration read again (SIGHUP) that does not read: the running one is kept.
public struct ReloadError: Error, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}
