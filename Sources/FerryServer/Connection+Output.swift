import FerryCache
import FerryLoop
import FerryBytes
import FerryProtocol

/// The connection's output: replies are appended as frames and flushed once per loop iteration; unsent bytes drive
/// backpressure (see `Backpressure`).
extension Connection {

    func writeResult(id: UInt64, result: JSONObject, body: [UInt8]) { writeResult(id: id, result: result, body: body[...]) }

    /// The same from a slice (a stored response's body inside its record, without a copy). A body larger than one
    /// piece is written as the socket drains (`writeStreamed`).
    func writeResult(id: UInt64, result: JSONObject, body: ArraySlice<UInt8>) {
        guard body.count <= pieceBytes else {
            writeStreamed(id: id, result: result, body: .bytes(body))
            return
        }
        appendFinal(id: id, result: result, body: body)
    }

    /// A reply whose body goes out in `chunk` events as the client reads, then the final frame with the last piece.
    /// Bodies held in memory are capped per connection (`maxUnreadReplyBytes`) for a client that has stopped
    /// reading (nothing of its output written for `stalledAfterMs`): past the cap it gets `resource_exhausted` for
    /// further such replies instead of growing the daemon. A client that reads is never refused: its replies drain.
    @discardableResult
    func writeStreamed(id: UInt64, result: JSONObject, body: ReplyBody, onDrop: (() -> Void)? = nil,
                       amend: ((inout JSONObject) -> Void)? = nil) -> StreamedReply? {
        guard !isClosed else {
            onDrop?()
            return nil
        }
        if body.holdsMemory && unreadMemoryBytes > 0 && unreadMemoryBytes + body.size > table.config.maxUnreadReplyBytes
            && isStalled {
            table.stats.countError(.resourceExhausted, op: nil)
            onDrop?()
            writeError(id: id, error: WireError(.resourceExhausted, """
                \(unreadMemoryBytes) bytes of earlier replies wait unread on this connection (at most \(table.config.maxUnreadReplyBytes)); \
                read them, then ask again
                """, details: ["limit": .int(Int64(table.config.maxUnreadReplyBytes))]))
            return nil
        }
        if case .spool = body, isStalled, streams.count(where: \.followsSpool) >= Connection.maxUnreadSpools {
            // Each holds a transfer's file (and, once stored, keeps it on disk): a client that has stopped reading
            // does not get more of them.
            table.stats.countError(.resourceExhausted, op: nil)
            onDrop?()
            writeError(id: id, error: WireError(.resourceExhausted, """
                \(Connection.maxUnreadSpools) downloads wait unread on this connection and it has read nothing for \
                \(Connection.stalledAfterMs) ms; read them, then ask again
                """, details: ["limit": .int(Int64(Connection.maxUnreadSpools))]))
            return nil
        }
        let reply = StreamedReply(id: id, result: result, body: body)
        reply.onDrop = onDrop
        reply.amend = amend
        streams.append(reply)
        streamedBytes += body.size
        if body.holdsMemory { unreadMemoryBytes += body.size }
        pump()
        return reply
    }

    /// `cancel` of a reply whose body is still being sent: it stops (the work behind it too, `onDrop`) and ends
    /// with `cancelled`, which voids the chunks sent.
    func cancelStream(_ id: UInt64) -> Bool {
        guard let index = streams.firstIndex(where: { $0.id == id }) else { return false }
        let reply = streams.remove(at: index)
        reply.isOver = true
        streamedBytes -= reply.remaining
        if reply.body.holdsMemory { unreadMemoryBytes -= reply.remaining }
        reply.onDrop?()
        table.stats.countError(.cancelled, op: nil)
        writeError(id: id, error: WireError(.cancelled, "cancelled by the client"))
        return true
    }

    /// Output waits and none of it was written for `stalledAfterMs`: the client has stopped reading.
    var isStalled: Bool { pendingOutputBytes > 0 && iterationMs - lastDrainMs >= Connection.stalledAfterMs }

    /// The largest body piece of one frame: a quarter MiB, or less when frames are small.
    var pieceBytes: Int { min(Connection.streamPieceBytes, table.config.limits.maxFrameBytes - ProtocolLimits.headerBytes - 4096) }

    /// Writes pieces of the streamed replies, oldest first, while this connection's unsent output is under its
    /// window and the daemon's reply bytes are under their budget. A connection with nothing unsent always gets one
    /// piece, so every reader makes progress however full the budget is; one that does not read stops here. A
    /// reply waiting for its body to arrive (a spool) is passed over until the spool wakes it.
    func pump() {
        // A piece written can resume reading, whose requests can stream too: they join the queue, this loop runs it.
        guard !isPumping else { return }
        isPumping = true
        defer { isPumping = false }
        while !isClosed,
              pendingOutputBytes < table.config.highWaterBytes,
              pendingOutputBytes == 0 || table.budget.hasRoom,
              let index = streams.firstIndex(where: { !$0.isWaiting }) {
            let reply = streams[index]
            if !sendBufferRaised && reply.body.size >= Connection.largeStreamBytes {
                sendBufferRaised = true
                pipe.setSendBuffer(bytes: Connection.largeStreamSendBuffer)
            }
            let before = reply.remaining
            let piece = reply.next(max: pieceBytes)
            let taken = before - reply.remaining
            streamedBytes -= taken
            if reply.body.holdsMemory { unreadMemoryBytes -= taken }
            switch piece {
            case .bytes(let bytes, let isLast) where isLast:
                streams.remove(at: index)
                reply.isOver = true
                var result = reply.result
                if reply.sent > bytes.count, result["size"] == nil { result["size"] = .int(Int64(reply.sent)) }
                reply.amend?(&result)
                appendFinal(id: reply.id, result: result, body: bytes)
            case .bytes(let bytes, _):
                guard !bytes.isEmpty else { continue }
                let offset = reply.sent - bytes.count
                // The first chunk says the whole size when it is known (not for a body still arriving), so that a
                // client makes room once: growing a 10 MB body as it came cost FerryClient 40 % of its throughput.
                let size = offset == 0 && reply.body.size > 0 ? reply.body.size : nil
                appendFrame(body: bytes) { out in
                    Connection.writeEventHead(id: reply.id, name: .chunk, to: &out)
                    JSONWriter.appendASCII(",\"data\":{\"offset\":", to: &out)
                    JSONWriter.writeInt(Int64(offset), to: &out)
                    if let size {
                        JSONWriter.appendASCII(",\"size\":", to: &out)
                        JSONWriter.writeInt(Int64(size), to: &out)
                    }
                    JSONWriter.appendASCII("}}", to: &out)
                }
            case .waiting:
                reply.whenReady { [weak self] in self?.pump() }
            case .failed(let error):
                streams.remove(at: index)
                reply.isOver = true
                reply.onDrop?()  // the work behind it (a transfer's waiter) ends with it
                streamedBytes -= reply.remaining
                if reply.body.holdsMemory { unreadMemoryBytes -= reply.remaining }
                table.stats.countError(error.code, op: nil)
                writeError(id: reply.id, error: error)
            }
        }
    }

    func appendFinal(id: UInt64, result: JSONObject, body: ArraySlice<UInt8>) {
        body.withUnsafeBytes { b in writeHotResult(id: id, body: b) { JSONWriter.write(result, to: &$0) } }
    }

    func writeError(id: UInt64, error: WireError) {
        appendFrame(body: [][...]) { out in
            JSONWriter.appendASCII("{\"id\":", to: &out)
            JSONWriter.writeInt(Int64(id), to: &out)
            JSONWriter.appendASCII(",\"final\":true,\"error\":", to: &out)
            JSONWriter.write(error.json, to: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    func writeEvent(id: UInt64, name: EventName, data: JSONObject, body: [UInt8]) {
        appendFrame(body: body[...]) { out in
            Connection.writeEventHead(id: id, name: name, to: &out)
            if !data.isEmpty {
                JSONWriter.appendASCII(",\"data\":", to: &out)
                JSONWriter.write(data, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeEventHead(id: UInt64, name: EventName, to out: inout [UInt8]) {
        JSONWriter.appendASCII("{\"id\":", to: &out)
        JSONWriter.writeInt(Int64(id), to: &out)
        JSONWriter.appendASCII(",\"final\":false,\"event\":", to: &out)
        JSONWriter.writeString(name.rawValue, to: &out)
    }

    /// The fast path's final frame (`HotReply.succeed`): the same envelope as `writeHotResult` writes, with the
    /// same bytes (`HotPathTests`), written by a `ByteCursor` into room on the stack and appended in one piece
    /// (and the body in another): no per-byte `Array.append`s.
    func writeHotFrame(id: UInt64, body: UnsafeRawBufferPointer, result: (inout ByteCursor) -> Void) {
        lastHotBodyBytes = body.count
        var room = 256
        while true {
            // A result longer than the room is written again with more (none of today's is).
            let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: room) { buffer -> Bool in
                var c = ByteCursor(buffer)
                _ = c.reserve(ProtocolLimits.headerBytes)
                c.ascii("{\"id\":")
                c.int(Int64(id))
                c.ascii(",\"final\":true,\"result\":")
                result(&c)
                c.byte(UInt8(ascii: "}"))
                guard !c.overflowed else { return false }
                c.patch(FrameEncoder.header(jsonLength: c.count - ProtocolLimits.headerBytes, bodyLength: body.count), at: 0)
                appendFrame(head: c.written, body: body)
                return true
            }
            if written { return }
            room *= 4
        }
    }

    /// A final frame whose result is written by `result`: a hot operation's (`HotReply`), and every other one
    /// through `appendFinal`, so both paths write the same envelope.
    func writeHotResult(id: UInt64, body: UnsafeRawBufferPointer, result: (inout [UInt8]) -> Void) {
        lastHotBodyBytes = body.count
        appendFrame(body: body) { out in
            JSONWriter.appendASCII("{\"id\":", to: &out)
            JSONWriter.writeInt(Int64(id), to: &out)
            JSONWriter.appendASCII(",\"final\":true,\"result\":", to: &out)
            result(&out)
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A frame whose body lies in an array: a large one can wait in a queued write as it is (`KeptBytes`).
    private func appendFrame(body: ArraySlice<UInt8>, json: (inout [UInt8]) -> Void) {
        let owner = body.count >= Connection.directWriteBytes ? KeptBytes(body) : nil
        body.withUnsafeBytes { b in appendFrame(body: b, keeping: owner, json: json) }
    }

    /// `owner`: keeps `body`'s memory alive and unchanged, so that what the kernel does not take at once waits
    /// in a queued write without a copy; nil: `body` is valid only during the call, and its rest is copied.
    private func appendFrame(body: UnsafeRawBufferPointer, keeping owner: KeptBytes? = nil, json: (inout [UInt8]) -> Void) {
        guard !isClosed else { return }
        // Small frames before a large kept body (a fetch's `response` event) go first, so the body need not join
        // them in the output: without this, a whole high-water mark of pieces was copied behind them.
        if owner != nil && !out.isEmpty && outDescriptors.isEmpty && body.count >= Connection.directWriteBytes {
            guard writeOutput() else { return }
        }
        if writesDirectly(body, queueable: owner != nil) {
            var head: [UInt8] = []
            head.reserveCapacity(256)
            FrameEncoder.appendHead(to: &head, bodyLength: body.count, writeJSON: json)
            return head.withUnsafeBytes { writeFrameDirectly(head: $0, body: body, keeping: owner) }
        }
        outputStarts()
        let before = out.count
        FrameEncoder.append(to: &out, body: body, writeJSON: json)
        outputGrew(by: out.count - before)
    }

    /// A frame whose head (header and JSON) is written already: the fast path's (`writeHotFrame`).
    private func appendFrame(head: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer) {
        guard !isClosed else { return }
        if writesDirectly(body) { return writeFrameDirectly(head: head, body: body) }
        outputStarts()
        out.append(contentsOf: head)
        if body.count > 0 { out.append(contentsOf: body) }
        outputGrew(by: head.count + body.count)
    }

    /// A large body with nothing queued before it goes to the kernel from where it is (`writeFrameDirectly`);
    /// one that can be kept (`queueable`) also goes behind queued writes, as a queued write of its own.
    private func writesDirectly(_ body: UnsafeRawBufferPointer, queueable: Bool = false) -> Bool {
        body.count >= Connection.directWriteBytes && out.isEmpty && outDescriptors.isEmpty && (queuedWriteBytes == 0 || queueable)
    }

    /// Output starts waiting now: a stall is measured from here (or from the last write), not from an old drain.
    private func outputStarts() {
        if pendingOutputBytes == 0 { lastDrainMs = iterationMs }
    }

    /// `bytes` more wait in the output: flushed at the end of the iteration, and counted against backpressure.
    private func outputGrew(by bytes: Int) {
        table.outputBytes += bytes
        if !needsFlush {
            needsFlush = true
            table.scheduleFlush(self)
        }
        applyBackpressure()
    }

    /// A large body with nothing waiting before it: the frame's head and the body go to the kernel in one `writev`
    /// from where the body is, and only what the kernel does not take now is copied into the output. Why: a large
    /// value or download went through the output buffer piece by piece, a copy of every byte (18 % of ferryd's time
    /// on a 10 MB hit, perf) on pages freshly faulted in.
    private func writeFrameDirectly(head: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, keeping owner: KeptBytes? = nil) {
        var written = 0
        if queuedWriteBytes == 0 {
            written = pipe.tryWrite(head, body)
            if written < 0 {
                table.log.debug("conn=\(id) write error: \(loopErrorText(Int32(written)))")
                return close()
            }
            table.stats.bytesOut += UInt64(written)
            usage.bytesOut += UInt64(written)
            lastDrainMs = iterationMs
            if written == head.count + body.count { return }
        }
        if let owner {
            // The rest is queued behind any queued before it: the head's rest copied, the body's kept as it is.
            let headRest = UnsafeRawBufferPointer(rebasing: head[min(written, head.count)...])
            let bodyRest = UnsafeRawBufferPointer(rebasing: body[max(0, written - head.count)...])
            guard pipe.write(copying: headRest, thenKeeping: bodyRest, owner: owner) else { return close() }
            queuedWriteBytes += headRest.count + bodyRest.count
            table.outputBytes += headRest.count + bodyRest.count
            return applyBackpressure()
        }
        // The rest waits in the output as any reply does.
        if written < head.count {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: head[written...]))
            out.append(contentsOf: body.assumingMemoryBound(to: UInt8.self))
        } else {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: body.assumingMemoryBound(to: UInt8.self)[(written - head.count)...]))
        }
        outputGrew(by: out.count)
    }
}

/// The array a large body lies in, held by a queued write until libuv has written it (`LoopPipe.write(copying:
/// thenKeeping:owner:)`): held, the array is neither freed nor changed (another holder's change copies it first).
final class KeptBytes {
    let bytes: ArraySlice<UInt8>
    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }
}
