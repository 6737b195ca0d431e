/// A request envelope as the server reads it (PROTOCOL.md section 3).
public struct RequestEnvelope: Sendable, Equatable {
    public var id: UInt64
    public var op: String
    public var args: JSONObject
    public var timeoutMs: Int64?
    /// The body continues in continuation frames (PROTOCOL.md section 5).
    public var more: Bool

    public init(id: UInt64, op: String, args: JSONObject = JSONObject(), timeoutMs: Int64? = nil, more: Bool = false) {
        self.id = id
        self.op = op
        self.args = args
        self.timeoutMs = timeoutMs
        self.more = more
    }

    /// The largest id: ids must survive a trip through IEEE doubles in any client language.
    public static let maxID: UInt64 = (1 << 53) - 1
    public static let maxTimeoutMs: Int64 = Int64(Int32.max)

    /// The arguments for which null means something of its own, not "absent": `cache.touch`'s `ttl_ms: null` (no
    /// expiry).
    public static func nullIsAValue(op: String, argument: String) -> Bool { op == "cache.touch" && argument == "ttl_ms" }

    /// Why an envelope was refused, with the request id when it could be read (so the reply can name it).
    public struct Invalid: Error, Sendable, Equatable {
        public var id: UInt64
        public var error: WireError
    }

    /// Parses and checks a request envelope. Every failure is a call error (`invalid_argument`) answered with the
    /// request's id — read by a tolerant scan when the JSON itself is refused (`EnvelopeID`) — or 0 when no id can
    /// be read. A member whose value is null is absent, as everywhere in the protocol.
    public static func parse(_ json: UnsafeRawBufferPointer, maxNesting: Int) throws(Invalid) -> RequestEnvelope {
        let value: JSONValue
        do {
            value = try JSONParser.parse(json, maxDepth: maxNesting)
        } catch {
            throw Invalid(id: EnvelopeID.salvage(json) ?? 0, error: WireError(.invalidArgument, "invalid JSON envelope: \(error)"))
        }
        guard case .object(let o) = value else {
            throw Invalid(id: 0, error: WireError(.invalidArgument, "the envelope must be a JSON object"))
        }
        guard let idValue = o["id"] else {
            throw Invalid(id: 0, error: WireError(.invalidArgument, "the envelope has no \"id\""))
        }
        guard case .int(let rawID) = idValue, rawID >= 1, UInt64(rawID) <= maxID else {
            throw Invalid(id: 0, error: WireError(.invalidArgument, "\"id\" must be an integer from 1 to 2^53-1"))
        }
        let id = UInt64(rawID)
        guard let opValue = o["op"] else {
            throw Invalid(id: id, error: WireError(.invalidArgument, "the envelope has no \"op\""))
        }
        guard case .string(let op) = opValue else {
            throw Invalid(id: id, error: WireError(.invalidArgument, "\"op\" must be a string"))
        }
        var args = JSONObject()
        if let a = o["args"], a != .null {
            guard case .object(let ao) = a else {
                throw Invalid(id: id, error: WireError(.invalidArgument, "\"args\" must be an object"))
            }
            // One rule for every operation: an argument whose value is null is absent (but where null is a value).
            args = ao.members.contains(where: { $0.value == .null })
                ? JSONObject(ao.members.filter { $0.value != .null || nullIsAValue(op: op, argument: $0.key) }) : ao
        }
        var timeout: Int64? = nil
        if let t = o["timeout_ms"], t != .null {
            guard case .int(let ms) = t, ms >= 1, ms <= maxTimeoutMs else {
                throw Invalid(id: id, error: WireError(.invalidArgument, "\"timeout_ms\" must be an integer from 1 to \(maxTimeoutMs)"))
            }
            timeout = ms
        }
        var more = false
        if let m = o["more"], m != .null {
            guard case .bool(let b) = m else { throw Invalid(id: id, error: WireError(.invalidArgument, "\"more\" must be a boolean")) }
            more = b
        }
        return RequestEnvelope(id: id, op: op, args: args, timeoutMs: timeout, more: more)
    }

    public static func parse(_ json: [UInt8], maxNesting: Int = 32) throws(Invalid) -> RequestEnvelope {
        do {
            return try json.withUnsafeBytes { try parse($0, maxNesting: maxNesting) }
        } catch let e as Invalid {
            throw e
        } catch {
            fatalError("unreachable")
        }
    }

    /// Writes the envelope's JSON as `JSONWriter.write(json, to:)` does, without building the tree first (a
    /// client sends one for every call).
    ///
    /// ```swift
    /// var out: [UInt8] = []
    /// RequestEnvelope(id: 7, op: "ping").write(to: &out)   // {"id":7,"op":"ping"}
    /// ```
    public func write(to out: inout [UInt8]) {
        JSONWriter.appendASCII("{\"id\":", to: &out)
        JSONWriter.writeInt(Int64(id), to: &out)
        JSONWriter.appendASCII(",\"op\":", to: &out)
        JSONWriter.writeString(op, to: &out)
        if !args.isEmpty {
            JSONWriter.appendASCII(",\"args\":", to: &out)
            JSONWriter.write(args, to: &out)
        }
        if let timeoutMs {
            JSONWriter.appendASCII(",\"timeout_ms\":", to: &out)
            JSONWriter.writeInt(timeoutMs, to: &out)
        }
        if more { JSONWriter.appendASCII(",\"more\":true", to: &out) }
        out.append(UInt8(ascii: "}"))
    }

    /// How deeply the envelope nests: what the server's `max_nesting` limits.
    public var depth: Int { args.isEmpty ? 1 : 1 + JSONValue.object(args).depth }

    /// The envelope as a client writes it.
    public var json: JSONValue {
        var o: JSONObject = ["id": .int(Int64(id)), "op": .string(op)]
        if !args.isEmpty { o["args"] = .object(args) }
        if let timeoutMs { o["timeout_ms"] = .int(timeoutMs) }
        if more { o["more"] = true }
        return .object(o)
    }
}

/// A continuation frame of a request body sent in several frames: `{"id": N, "more": bool}` with the next part as
/// its body, no `op`.
public struct ContinuationEnvelope: Sendable, Equatable {
    public var id: UInt64
    public var more: Bool

    public init(id: UInt64, more: Bool) {
        self.id = id
        self.more = more
    }

    /// The continuation in `json`, or nil when it is not one (it has an `op`, or lacks `id` or `more`).
    public static func parse(_ json: UnsafeRawBufferPointer, maxNesting: Int) -> ContinuationEnvelope? {
        guard case .object(let o)? = try? JSONParser.parse(json, maxDepth: maxNesting), o["op"] == nil,
              case .int(let id)? = o["id"], id >= 1, UInt64(id) <= RequestEnvelope.maxID,
              case .bool(let more)? = o["more"] else { return nil }
        return ContinuationEnvelope(id: UInt64(id), more: more)
    }

    public var json: JSONValue { ["id": .int(Int64(id)), "more": .bool(more)] }
}
