import FerryBytes
/// A reply envelope as a client reads it.
public enum ReplyEnvelope: Sendable, Equatable {
    case result(id: UInt64, JSONObject)
    case error(id: UInt64, WireError)
    case event(id: UInt64, name: String, data: JSONObject)

    public var id: UInt64 {
        switch self {
        case .result(let id, _), .error(let id, _), .event(let id, _, _): return id
        }
    }

    public var isFinal: Bool {
        if case .event = self { return false }
        return true
    }

    /// Reads a reply; `nil` when it is not a well-formed reply envelope.
    public static func parse(_ value: JSONValue) -> ReplyEnvelope? {
        guard case .object(let o) = value, let rawID = o["id"]?.intValue, rawID >= 0,
              let final = o["final"]?.boolValue else { return nil }
        let id = UInt64(rawID)
        if final {
            if let r = o["result"]?.objectValue { return .result(id: id, r) }
            if let e = o["error"]?.objectValue, let err = WireError(json: e) { return .error(id: id, err) }
            return nil
        }
        guard let name = o["event"]?.stringValue else { return nil }
        return .event(id: id, name: name, data: o["data"]?.objectValue ?? JSONObject())
    }

    /// Reads a reply from its JSON; `nil` when it is not a well-formed reply envelope.
    ///
    /// Why a second reader: a client reads one reply per call, and almost all are a result written in the server's
    /// order, `{"id":N,"final":true,"result":{…}}`. Those skip the outer object (its tree and three key lookups):
    /// the prefix is matched byte by byte and only the result object is parsed. Anything else — another order,
    /// whitespace, another member, an error or an event — takes the general path, so both read the same replies
    /// the same way (a test holds them to it).
    ///
    /// ```swift
    /// ReplyEnvelope.parse(Array(#"{"id":7,"final":true,"result":{"pong":true}}"#.utf8), maxDepth: 64)
    /// // .result(id: 7, ["pong": true])
    /// ```
    public static func parse(_ json: [UInt8], maxDepth: Int) -> ReplyEnvelope? {
        json.withUnsafeBytes { parse($0, maxDepth: maxDepth) }
    }

    /// The same, from bytes in place.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) -> ReplyEnvelope? {
        if let fast = parseResult(bytes, maxDepth: maxDepth) { return fast }
        guard let value = try? JSONParser.parse(bytes, maxDepth: maxDepth) else { return nil }
        return parse(value)
    }

    private static let idPrefix = Array(#"{"id":"#.utf8)
    private static let resultPrefix = Array(#","final":true,"result":"#.utf8)

    /// The fast path of `parse(_:maxDepth:)`: a result in the server's order, or nil to take the general path.
    private static func parseResult(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) -> ReplyEnvelope? {
        guard let (id, range) = resultInServerOrder(bytes) else { return nil }
        // The result must be exactly one object (the parser refuses anything after it).
        guard case .object(let result)? = try? JSONParser.parse(UnsafeRawBufferPointer(rebasing: bytes[range]), maxDepth: maxDepth - 1)
        else { return nil }
        return .result(id: id, result)
    }

    /// A final result written in the server's order, `{"id":N,"final":true,"result":{…}}`, found by its prefix
    /// alone: the id and where the result object's bytes lie (from its `{` to the byte before the envelope's closing
    /// brace), not parsed; nil for anything else. For readers that check a known result by hand (`parse` parses it;
    /// the benchmark's load generators compare it with the bytes they expect).
    ///
    /// ```swift
    /// let json = Array(#"{"id":7,"final":true,"result":{"pong":true}}"#.utf8)
    /// json.withUnsafeBytes { ReplyEnvelope.resultInServerOrder($0) }   // (7, 30..<43): {"pong":true}
    /// ```
    public static func resultInServerOrder(_ bytes: UnsafeRawBufferPointer) -> (id: UInt64, result: Range<Int>)? {
        guard bytes.count > idPrefix.count + resultPrefix.count + 3, matches(bytes, at: 0, idPrefix),
              bytes[bytes.count - 1] == UInt8(ascii: "}") else { return nil }
        // The id: 1 to 16 digits, no leading zero (the server's integers), at most 2^53 - 1 as every id is.
        var at = idPrefix.count
        var id: UInt64 = 0
        while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9"), at - idPrefix.count < 16 {
            id = id * 10 + UInt64(bytes[at] - UInt8(ascii: "0"))
            at += 1
        }
        let digits = at - idPrefix.count
        guard digits > 0, digits == 1 || bytes[idPrefix.count] != UInt8(ascii: "0"), id <= RequestEnvelope.maxID,
              bytes.count - at > resultPrefix.count, matches(bytes, at: at, resultPrefix),
              bytes[at + resultPrefix.count] == UInt8(ascii: "{")
        else { return nil }
        return (id, at + resultPrefix.count..<bytes.count - 1)
    }

    /// Whether `bytes` holds `expected` at `offset` (the caller checked there is room).
    private static func matches(_ bytes: UnsafeRawBufferPointer, at offset: Int, _ expected: [UInt8]) -> Bool {
        expected.withUnsafeBytes { UTF8Bytes.equal(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + expected.count]), $0) }
    }

    /// The envelope as the server writes it: fields in PROTOCOL.md's order.
    public var json: JSONValue {
        switch self {
        case .result(let id, let r): return ["id": .int(Int64(id)), "final": true, "result": .object(r)]
        case .error(let id, let e): return ["id": .int(Int64(id)), "final": true, "error": .object(e.json)]
        case .event(let id, let name, let data):
            var o: JSONObject = ["id": .int(Int64(id)), "final": false, "event": .string(name)]
            if !data.isEmpty { o["data"] = .object(data) }
            return .object(o)
        }
    }
}
