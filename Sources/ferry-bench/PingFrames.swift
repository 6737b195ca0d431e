import FerryProtocol

/// The `ping` request frames the raw modes send, written by hand into a reused buffer through `FrameEncoder`, and
/// the check applied to every reply.
///
/// Ids are kept the same width (7 digits, 1_000_000 … 9_388_607) so that every request frame has the same size: the
/// C reference is told that size, and a frame that grew by a byte every power of ten would make "same size" a lie.
/// The range is 2^23 ids wide, a multiple of `PingFrames.slots`, so `slot(of:)` stays consistent when ids wrap
/// (a run would need 8 million requests on one connection to wrap at all).
enum PingFrames {
    static let firstID: UInt64 = 1_000_000
    static let idSpan: UInt64 = 1 << 23
    /// Size of the table of send times the pipelined modes keep; more than any in-flight count allowed.
    static let slots = 1024

    /// The id of the `sequence`-th request on a connection (0-based).
    @inline(__always)
    static func id(_ sequence: Int) -> UInt64 { firstID + UInt64(sequence) & (idSpan - 1) }

    /// Where the send time of request `id` lives in a table of `slots` entries.
    @inline(__always)
    static func slot(of id: UInt64) -> Int { Int((id &- firstID) & UInt64(slots - 1)) }

    /// Appends one `{"id":N,"op":"ping"}` frame with no body. Built field by field rather than through
    /// `RequestEnvelope.json` so the client spends as little as possible per request: the raw modes should measure
    /// ferryd, not the generator. The bytes are what `JSONWriter` would produce for the same envelope.
    @inline(__always)
    static func append(id: UInt64, to out: inout [UInt8]) {
        FrameEncoder.append(to: &out) { json in
            JSONWriter.appendASCII(#"{"id":"#, to: &json)
            JSONWriter.writeInt(Int64(id), to: &json)
            JSONWriter.appendASCII(#","op":"ping"}"#, to: &json)
        }
    }

    /// The size of one request frame: the `msg_bytes` reported for the C reference.
    static var requestBytes: Int {
        var out: [UInt8] = []
        append(id: firstID, to: &out)
        return out.count
    }

    /// Checks that a reply frame is the final `{"pong":true}` result of some request and returns that request's id:
    /// every byte of a reply in the server's form is compared (`{"id":N,"final":true,"result":{"pong":true}}`, no
    /// body), anything else is parsed whole and reported — a benchmark that skipped the check would count error
    /// replies as successes. Why by hand: parsing every reply into a tree was most of this client's work, and the C
    /// reference's client checks only sizes, so the ratio measured the two clients as much as the two servers.
    static func pongID(_ frame: FrameView) throws(BenchError) -> UInt64 {
        if let id = exactPong(frame) { return id }
        let value: JSONValue
        do {
            value = try JSONParser.parse(frame.json, maxDepth: 32)
        } catch {
            throw BenchError("ferryd sent invalid JSON: \(error)")
        }
        switch ReplyEnvelope.parse(value) {
        case .result(let id, let result)? where result["pong"]?.boolValue == true:
            return id
        case .error(let id, let e)?:
            throw BenchError("ping \(id) failed: \(e.codeName): \(e.message)")
        default:
            throw BenchError("unexpected reply to ping: \(String(decoding: frame.json, as: UTF8.self))")
        }
    }

    private static let pong = Array(#"{"pong":true}"#.utf8)

    /// The id of a reply that is exactly `{"id":N,"final":true,"result":{"pong":true}}` with no body; nil otherwise.
    static func exactPong(_ frame: FrameView) -> UInt64? {
        guard frame.body.isEmpty, let (id, range) = ReplyEnvelope.resultInServerOrder(frame.json),
              UnsafeRawBufferPointer(rebasing: frame.json[range]).elementsEqual(pong) else { return nil }
        return id
    }
}
