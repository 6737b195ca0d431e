/// The closed set of error codes of protocol v1 (PROTOCOL.md section 8), modelled on gRPC's.
///
/// ```swift
/// ErrorCode(rawValue: "cancelled")   // .cancelled
/// ErrorCode.parse("no_such_code")    // .internal: unknown codes are treated as internal
/// ```
public enum ErrorCode: String, Sendable, CaseIterable, Equatable {
    /// Malformed envelope or arguments.
    case invalidArgument = "invalid_argument"
    /// Valid, but not now: an operation before `hello`, a second `hello`.
    case failedPrecondition = "failed_precondition"
    /// The thing named does not exist.
    case notFound = "not_found"
    /// Reserved: the thing to create exists.
    case alreadyExists = "already_exists"
    /// The request's `timeout_ms` elapsed.
    case deadlineExceeded = "deadline_exceeded"
    /// The client cancelled the request.
    case cancelled
    /// The server is shutting down, or a dependency is unreachable.
    case unavailable
    /// A limit was reached.
    case resourceExhausted = "resource_exhausted"
    /// The peer is not allowed.
    case permissionDenied = "permission_denied"
    /// Unknown operation, or no common protocol version.
    case unimplemented
    /// A bug in the server.
    case `internal`
    /// The byte stream broke the framing rules; the connection closes.
    case protocolError = "protocol_error"
    /// An `invalid_argument`-class error of `image.*`: the body is not an image, is cut before its size, or is
    /// larger than the pixel limit.
    case invalidImage = "invalid_image"

    /// The code for a string from the wire; codes this version does not know become `.internal`.
    public static func parse(_ s: String) -> ErrorCode { ErrorCode(rawValue: s) ?? .internal }

    /// A dense index for counters.
    public var index: Int { ErrorCode.allCases.firstIndex(of: self)! }
}

/// An error as it travels in a final reply: `{"code", "message", "details"?}`.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    /// The code string as received (differs from `code.rawValue` only for codes this version does not know).
    public var codeName: String
    public var message: String
    public var details: JSONObject?
    /// Who raised it; never sent on the wire.
    public var raisedBy: Raiser = .daemon

    /// `.daemon`: it came in a reply (or the daemon is about to send it). `.connection`: a client raised it itself
    /// because no daemon answered or the connection broke; a caller may reconnect or start a daemon.
    public enum Raiser: Sendable, Equatable { case daemon, connection }

    public init(_ code: ErrorCode, _ message: String, details: JSONObject? = nil) {
        self.code = code
        self.codeName = code.rawValue
        self.message = message
        self.details = details
    }

    public var description: String { "\(codeName): \(message)" }

    public var json: JSONObject {
        var o: JSONObject = ["code": .string(codeName), "message": .string(message)]
        if let details { o["details"] = .object(details) }
        return o
    }

    /// Reads an `error` object from a reply; `nil` when it lacks a string `code`.
    public init?(json: JSONObject) {
        guard let name = json["code"]?.stringValue else { return nil }
        code = ErrorCode.parse(name)
        codeName = name
        message = json["message"]?.stringValue ?? ""
        details = json["details"]?.objectValue
    }
}
