#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFerryIO
import FerryProtocol

/// Large bodies received straight into where they go: once a reply frame's envelope is in and much of its body is
/// still to come (a `chunk` of a 10 MB download, a 200 KB value), the reader hands the rest of that frame to the
/// call's `ChunkBuffer`, or for a stream to the event's own array, instead of its read buffer. Why: through the read
/// buffer every byte was copied twice (by the kernel, then into the body) and the partial frame was moved to the
/// front as the buffer filled: 40 % of FerryClient's time on a 10 MB body (perf), at 0.63 of a raw Unix socket's
/// throughput.
extension ClientConnection {
    /// A frame's body being received into `buffer`; the stream owes `left` more bytes of it before the next frame.
    struct DirectBody {
        let buffer: ChunkBuffer
        var left: Int
        let ending: Ending

        /// What happens once the body is in.
        enum Ending {
            /// A plain call's `chunk`: nothing, it joined the call's body.
            case joined
            /// A plain call's final reply: delivered with the body gathered in the call's buffer.
            case final(id: UInt64, result: JSONObject)
            /// A stream's event: yielded to the stream with its body.
            case event(id: UInt64, name: String, data: JSONObject)
        }
    }

    /// Body bytes a frame must still be owed for its rest to be read directly: below this a copy costs less than
    /// the extra read it saves.
    static let directBodyBytes = 64 * 1024

    /// Takes the open frame for a direct read when it is a plain call's chunk or final result with a body, or a
    /// stream's event: for a call, into its buffer (made at the first chunk, sized by its `size`, or by the frame);
    /// for a stream, into an array of the body's size. What arrived with the envelope is copied in. Nil leaves the
    /// frame to the read buffer: a cancelled call's, an error, a result naming a descriptor.
    func openDirectBody(_ view: OpenFrameView) -> DirectBody? {
        guard let reply = ReplyEnvelope.parse(view.json, maxDepth: 64) else { return nil }
        if case .result(_, let result) = reply, result["body_fd"] != nil { return nil }
        let taken = state.withLock { s -> DirectBody? in
            switch (s.waiters[reply.id], reply) {
            case (.call(let c, let chunks)?, .event(_, let name, let data)) where name == EventName.chunk.rawValue:
                let buffer = chunks ?? ChunkBuffer(size: data["size"]?.intValue ?? Int64(view.bodyLength))
                if chunks == nil { s.waiters[reply.id] = .call(c, chunks: buffer) }
                return DirectBody(buffer: buffer, left: view.bodyLeft, ending: .joined)
            case (.call(let c, let chunks)?, .result(let id, let result)):
                let buffer = chunks ?? ChunkBuffer(size: Int64(view.bodyLength))
                if chunks == nil { s.waiters[id] = .call(c, chunks: buffer) }
                return DirectBody(buffer: buffer, left: view.bodyLeft, ending: .final(id: id, result: result))
            case (.stream?, .event(let id, let name, let data)):
                // Every event of a stream is an item of its own, a chunk too.
                return DirectBody(buffer: ChunkBuffer(size: Int64(view.bodyLength)), left: view.bodyLeft,
                                  ending: .event(id: id, name: name, data: data))
            default: return nil   // a call's other events are dropped; errors have no body to speak of
            }
        }
        guard let taken else { return nil }
        taken.buffer.append(view.bodyRead)
        return taken
    }

    /// Counts `n` bytes received into a direct body; when it is whole, a final reply joins `finals` (its body is
    /// in the call's buffer, which `deliver` hands over with the result) and a stream's event goes to its stream.
    /// Returns whether the body is whole.
    func directBodyReceived(_ n: Int, _ direct: inout DirectBody, finals: inout [Final]) -> Bool {
        direct.left -= n
        guard direct.left == 0 else { return false }
        switch direct.ending {
        case .joined: break
        case .final(let id, let result): ClientConnection.append(id, .success(FerryReply(result: result)), to: &finals)
        case .event(let id, let name, let data):
            let stream = state.withLock { s -> StreamWaiter? in
                if case .stream(let w)? = s.waiters[id] { return w }
                return nil
            }
            if let stream { yield(.event(name: name, data: data, body: direct.buffer.take()), to: stream) }
        }
        return true
    }
}
