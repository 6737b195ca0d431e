/// The sizes a Ferry connection enforces, announced by the server in the `hello` reply (PROTOCOL.md section 2).
///
/// ```swift
/// var limits = ProtocolLimits()
/// limits.maxFrameBytes = 1 << 20
/// ```
public struct ProtocolLimits: Sendable, Equatable {
    /// Largest frame accepted before `hello` succeeded.
    public var handshakeFrameBytes = 65536
    /// Largest frame, header included, either direction.
    public var maxFrameBytes = 4 * 1024 * 1024
    /// Largest JSON envelope.
    public var maxJSONBytes = 1024 * 1024
    /// Deepest nesting of arrays and objects in an envelope; the envelope object itself is depth 1.
    public var maxNesting = 32
    /// Requests in flight on one connection.
    public var maxInFlight = 256
    /// Largest value `cache.set` accepts.
    public var maxValueBytes = 16 * 1024 * 1024

    public init() {}

    /// The frame header: two big-endian u32 lengths.
    public static let headerBytes = 8
    /// Protocol versions this implementation speaks.
    public static let versions: [Int64] = [1]
    /// The revision of PROTOCOL.md this daemon follows, within version 1 (`hello`'s `protocol`): 1.1 made exact
    /// what 1.0 left to guessing (its section 11 lists what changed).
    public static let revision = "1.1"

    public var json: JSONObject {
        [
            "handshake_frame_bytes": .int(Int64(handshakeFrameBytes)),
            "max_frame_bytes": .int(Int64(maxFrameBytes)),
            "max_json_bytes": .int(Int64(maxJSONBytes)),
            "max_nesting": .int(Int64(maxNesting)),
            "max_in_flight": .int(Int64(maxInFlight)),
            "max_value_bytes": .int(Int64(maxValueBytes)),
        ]
    }

    /// Reads the limits a server announced; absent fields keep their defaults.
    public init(json: JSONObject) {
        if let v = json["handshake_frame_bytes"]?.intValue { handshakeFrameBytes = Int(v) }
        if let v = json["max_frame_bytes"]?.intValue { maxFrameBytes = Int(v) }
        if let v = json["max_json_bytes"]?.intValue { maxJSONBytes = Int(v) }
        if let v = json["max_nesting"]?.intValue { maxNesting = Int(v) }
        if let v = json["max_in_flight"]?.intValue { maxInFlight = Int(v) }
        if let v = json["max_value_bytes"]?.intValue { maxValueBytes = Int(v) }
    }
}
