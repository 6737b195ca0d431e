import FerryProtocol

/// Every failure FerryClient reports: the protocol's error code and message, plus `details` when the server sent
/// some. Local failures use the same codes: `unavailable` when no daemon answers or the connection drops,
/// `cancelled` when the calling task is cancelled, `deadline_exceeded` when a call's timeout passes.
///
/// ```swift
/// do { _ = try await client.call("nope") }
/// catch let e as FerryError where e.code == .unimplemented { print(e.message) }
/// ```
public struct FerryError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    /// The code as the server spelled it (differs from `code.rawValue` only for codes this client does not know).
    public var codeName: String
    public var message: String
    public var details: JSONObject?

    public init(_ code: ErrorCode, _ message: String, details: JSONObject? = nil) {
        self.code = code
        codeName = code.rawValue
        self.message = message
        self.details = details
    }

    init(_ wire: WireError) {
        code = wire.code
        codeName = wire.codeName
        message = wire.message
        details = wire.details
    }

    public var description: String { "\(codeName): \(message)" }
}

/// The final answer to a call: the result object and the reply body (chunks already joined).
public struct FerryReply: Sendable, Equatable {
    public var result: JSONObject
    public var body: [UInt8]

    public init(result: JSONObject, body: [UInt8] = []) {
        self.result = result
        self.body = body
    }
}

/// One item of a streamed call: events as they come, then the final reply.
public enum FerryStreamItem: Sendable, Equatable {
    case event(name: String, data: JSONObject, body: [UInt8])
    case final(FerryReply)
}
