import FerryLoop
import FerryProtocol

/// The connection's output: replies are appended as frames and flushed once per loop iteration; unsent bytes drive
/// backpressure (see `Backpressure`).
extension Connection {

    func writeResult(id: UInt64, result: JSONObject, body: [UInt8]) { writeResult(id: id, result: result, body: body[...]) }

    /// The same from a slice (a stored response's body inside its record, without a copy).
    func writeResult(id: UInt64, result: JSONObject, body: ArraySlice<UInt8>) {
        var result = result
        var finalBody = body
        let base = body.startIndex
        // Room for the final frame's envelope; anything beyond goes ahead as chunk events.
        let room = table.config.limits.maxFrameBytes - ProtocolLimits.headerBytes - 4096
        if body.count > room && room > 0 {
            var offset = 0
            while body.count - offset > room {
                let end = offset + room
                appendFrame(body: body[(base + offset)..<(base + end)]) { out in
                    Connection.writeEventHead(id: id, name: .chunk, to: &out)
                    JSONWriter.appendASCII(",\"data\":{\"offset\":", to: &out)
                    JSONWriter.writeInt(Int64(offset), to: &out)
                    JSONWriter.appendASCII("}}", to: &out)
                }
                offset = end
            }
            finalBody = body[(base + offset)...]
            if result["size"] == nil { result["size"] = .int(Int64(body.count)) }
        }
        appendFrame(body: finalBody) { out in
            JSONWriter.appendASCII("{\"id\":", to: &out)
            JSONWriter.writeInt(Int64(id), to: &out)
            JSONWriter.appendASCII(",\"final\":true,\"result\":", to: &out)
            JSONWriter.write(result, to: &out)
            out.append(UInt8(ascii: "}"))
        }
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

    private static func writeEventHead(id: UInt64, name: EventName, to out: inout [UInt8]) {
        JSONWriter.appendASCII("{\"id\":", to: &out)
        JSONWriter.writeInt(Int64(id), to: &out)
        JSONWriter.appendASCII(",\"final\":false,\"event\":", to: &out)
        JSONWriter.writeString(name.rawValue, to: &out)
    }

    private func appendFrame(body: ArraySlice<UInt8>, json: (inout [UInt8]) -> Void) {
        guard !isClosed else { return }
        body.withUnsafeBytes { b in FrameEncoder.append(to: &out, body: b, writeJSON: json) }
        if !needsFlush {
            needsFlush = true
            table.scheduleFlush(self)
        }
        applyBackpressure()
    }

    /// Answers a protocol error, then closes once the answer is written.
    func protocolError(_ error: WireError, id requestID: UInt64) {
        table.log.info("conn=\(id) protocol error: \(error.message)")
        writeError(id: requestID, error: error)
        closeAfterFlush()
    }

    /// Sends what is buffered, then closes: used after a protocol error and to refuse a connection.
    func closeAfterFlush() {
        guard life == .open || life == .finishing else { return }
        life = .closingAfterFlush
        stopReading()
        for request in Array(inFlight.values) { request.abandon() }
        if pendingOutputBytes == 0 { close() }
    }

    /// Hands buffered replies to the kernel: `tryWrite` first (no copy, no callback), then a queued write of an
    /// owned copy of what did not fit.
    func flush() {
        needsFlush = false
        guard !isClosed, !out.isEmpty else { return }
        var written = 0
        if queuedWriteBytes == 0 {
            written = out.withUnsafeBytes { pipe.tryWrite($0) }
            if written < 0 {
                table.log.debug("conn=\(id) write error: \(loopErrorText(Int32(written)))")
                close()
                return
            }
        }
        table.stats.bytesOut += UInt64(written)
        let rest = out.count - written
        if rest > 0 {
            let queued = out.withUnsafeBytes { pipe.write(copying: UnsafeRawBufferPointer(rebasing: $0[written...])) }
            guard queued else { return close() }
            queuedWriteBytes += rest
        }
        out.removeAll(keepingCapacity: out.capacity <= 256 * 1024)
        afterOutputDrained()
    }

    func pipeDidWrite(count: Int, status: Int32) {
        queuedWriteBytes -= count
        if status == 0 { table.stats.bytesOut += UInt64(count) }
        guard !isClosed else { return }
        if status < 0 {
            close()
            return
        }
        afterOutputDrained()
    }

    private func afterOutputDrained() {
        if life == .closingAfterFlush && pendingOutputBytes == 0 {
            close()
            return
        }
        applyBackpressure()
    }

    func applyBackpressure() {
        switch backpressure.update(pendingBytes: heldBytes) {
        case .pause:
            table.log.debug("conn=\(id) paused: \(pendingOutputBytes) bytes unsent")
            stopReading()
        case .resume:
            table.log.debug("conn=\(id) resumed")
            guard life == .open else { return }
            processFrames()
            if !backpressure.isPaused { startReading() }
        case .none:
            break
        }
    }
}
