// One import gives applications the protocol's types too (ErrorCode, JSONObject, JSONValue).
@_exported import FerryProtocol

/// Every failure FerryClient reports: the protocol's error code and message, plus `details` when the server sent
/// some. Local failures use the same codes: `unavailable` (with `raisedBy == .connection`) when no daemon answers or the connection drops,
/// `cancelled` when the calling task is cancelled, `deadline_exceeded` when a call's timeout passes. It is the
/// protocol's own error type (`WireError`), so nothing is lost or renamed between the wire and the caller.
///
/// ```swift
/// do { _ = try await client.call("nope") }
/// catch let e as FerryError where e.code == .unimplemented { print(e.message) }
/// ```
public typealias FerryError = WireError

extension FerryError {
    /// `unavailable`, raised by the client because no daemon answers or the connection broke (`raisedBy`
    /// `.connection`): what tells a CLI to start a daemon or exit 3, whatever the message says.
    static func connection(_ message: String) -> FerryError {
        var error = FerryError(.unavailable, message)
        error.raisedBy = .connection
        return error
    }
}

/// The final answer to a call: the result object and the reply body (chunks already joined).
public struct FerryReply: Sendable, Equatable {
    public var result: JSONObject
    public var body: [UInt8]
    /// The body as a descriptor, when the request asked for one (`body_fd: true`) and the daemon handed it over
    /// (the result then names `body_fd`, and `body` is empty).
    public var file: BodyFile?

    public init(result: JSONObject, body: [UInt8] = [], file: BodyFile? = nil) {
        self.result = result
        self.body = body
        self.file = file
    }

    /// The body, whichever way it came: the bytes, or read from the descriptor.
    public func wholeBody() throws(FerryError) -> [UInt8] {
        guard let file else { return body }
        return try file.bytes()
    }
}

/// One item of a streamed call: events as they come, then the final reply.
public enum FerryStreamItem: Sendable, Equatable {
    case event(name: String, data: JSONObject, body: [UInt8])
    case final(FerryReply)
}
