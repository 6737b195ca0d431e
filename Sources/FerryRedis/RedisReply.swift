/// A Redis reply (RESP2), or why there is none.
///
/// ```swift
/// switch reply {
/// case .string(let bytes): …          // GET's value
/// case .nil: …                        // no such key
/// case .unavailable(let why): …       // not connected, timed out, connection lost: serve without Redis
/// default: …
/// }
/// ```
public enum RedisReply: Equatable, Sendable {
    case string([UInt8])
    case status(String)
    case integer(Int64)
    case `nil`
    /// An error reply from Redis (`MOVED 3999 127.0.0.1:7002`, `WRONGTYPE …`).
    case error(String)
    case array([RedisReply])
    /// No reply will come: the connection is down or was lost, or the command's time ran out.
    case unavailable(String)

    /// The reply as text (a status, a string, an error), for messages and tests.
    public var text: String? {
        switch self {
        case .string(let b): return String(decoding: b, as: UTF8.self)
        case .status(let s), .error(let s): return s
        default: return nil
        }
    }
}

/// Where Redis listens.
public enum RedisEndpoint: Equatable, Sendable, CustomStringConvertible {
    case tcp(host: String, port: Int)
    case unix(path: String)

    public var description: String {
        switch self {
        case .tcp(let host, let port): return "\(host):\(port)"
        case .unix(let path): return path
        }
    }
}
