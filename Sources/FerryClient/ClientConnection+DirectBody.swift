#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFerryIO
import FerryProtocol

/// Large bodies received straight into their call's buffer: once a reply frame's envelope is in and much of its body
/// is still to come (a `chunk` of a 10 MB download, a 200 KB value), the reader hands the rest of that frame to the
/// call's `ChunkBuffer` instead of its read buffer. Why: through the read buffer every byte was copied twice (by the
/// kernel, then into the call's body) and the partial frame was moved to the front as the buffer filled: 40 % of
/// FerryClient's time on a 10 MB body (perf), at 0.63 of a raw Unix socket's throughput.
/// Only plain calls take this path; a stream's chunks go out one by one as events, through the read buffer.
extension ClientConnection {
    /// A frame's body being received into `buffer`; the stream owes `left` more bytes of it before the next frame.
    struct DirectBody {
        let buffer: ChunkBuffer
        var left: Int
        /// A final reply's result, delivered once its body is in; nil for a `chunk` event (nothing waits on it).
        let final: (id: UInt64, result: JSONObject)?
    }

    /// Body bytes a frame must still be owed for its rest to be read directly: below this a copy costs less than
    /// the extra read it saves.
    static let directBodyBytes = 64 * 1024

    /// Takes the open frame for a direct read when it is a plain call's chunk or final result with a body, making
    /// the call's buffer (sized by the first chunk's `size`, or by the frame) and copying in what arrived with the
    /// envelope. Nil leaves the frame to the read buffer: a stream's, a cancelled call's, an error, a descriptor.
    func openDirectBody(_ view: OpenFrameView) -> DirectBody? {
        let final: (id: UInt64, result: JSONObject)?
        let id: UInt64, announced: Int64?
        switch ReplyEnvelope.parse(view.json, maxDepth: 64) {
        case .event(let eventID, let name, let data)? where name == EventName.chunk.rawValue:
            (id, announced, final) = (eventID, data["size"]?.intValue, nil)
        case .result(let resultID, let result)? where result["body_fd"] == nil:
            (id, announced, final) = (resultID, nil, (resultID, result))
        default: return nil
        }
        let buffer = state.withLock { s -> ChunkBuffer? in
            guard case .call(let c, let chunks)? = s.waiters[id] else { return nil }
            if let chunks { return chunks }
            let made = ChunkBuffer(size: announced ?? Int64(view.bodyLength))
            s.waiters[id] = .call(c, chunks: made)
            return made
        }
        guard let buffer else { return nil }
        buffer.append(view.bodyRead)
        return DirectBody(buffer: buffer, left: view.bodyLeft, final: final)
    }

    /// Counts `n` bytes received into a direct body; when it is whole, a final reply joins `finals` (its body is
    /// in the call's buffer, which `deliver` hands over with the result). Returns whether the body is whole.
    func directBodyReceived(_ n: Int, _ direct: inout DirectBody, finals: inout [Final]) -> Bool {
        direct.left -= n
        guard direct.left == 0 else { return false }
        if let final = direct.final { finals.append((final.id, .success(FerryReply(result: final.result)))) }
        return true
    }
}
