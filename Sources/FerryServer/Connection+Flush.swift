import FerryCache
import FerryLoop
import FerryBytes
import FerryProtocol

/// A connection's output on its way to the kernel: what `flush` writes at once and queues, what a finished queued
/// write frees, and the backpressure and closing that follow (`Connection+Output` builds the frames).
extension Connection {
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
        if pendingOutputBytes == 0 && streams.isEmpty { close() }
    }

    /// Hands buffered replies to the kernel: `tryWrite` first (no copy, no callback), then a queued write of an
    /// owned copy of what did not fit.
    func flush() {
        needsFlush = false
        guard !isClosed, !out.isEmpty else { return }
        if !outDescriptors.isEmpty { return flushWithDescriptors() }
        guard writeOutput() else { return }
        afterOutputDrained()
    }

    /// `flush`'s writing alone: the output to the kernel, the rest to a queued write, the buffer emptied. False when
    /// the connection closed. Nothing else runs meanwhile (no pump, no backpressure change), so a large body being
    /// appended can send the small frames before it first (`appendFrame(body:keeping:json:)`).
    func writeOutput() -> Bool {
        var written = 0
        if queuedWriteBytes == 0 {
            // Mutable access, in place: a read of the array from this object retained and released its storage.
            written = out.withUnsafeMutableBytes { pipe.tryWrite(UnsafeRawBufferPointer($0)) }
            if written < 0 {
                table.log.debug("conn=\(id) write error: \(loopErrorText(Int32(written)))")
                close()
                return false
            }
        }
        table.stats.bytesOut += UInt64(written)
        usage.bytesOut += UInt64(written)
        table.outputBytes -= written
        if written > 0 { lastDrainMs = iterationMs }
        let rest = out.count - written
        if rest > 0 {
            let queued = out.withUnsafeBytes { pipe.write(copying: UnsafeRawBufferPointer(rebasing: $0[written...])) }
            guard queued else {
                out.removeFirst(written)  // already subtracted: close() subtracts what is left
                close()
                return false
            }
            queuedWriteBytes += rest
        }
        // While replies stream, the buffer is refilled at once: keeping it saves a large allocation (and the
        // page faults of a heap grown back) per flush; idle, a connection keeps no more than 256 KiB.
        out.removeAll(keepingCapacity: out.capacity <= 256 * 1024 || !streams.isEmpty)
        return true
    }

    func pipeDidWrite(count: Int, status: Int32) {
        queuedWriteBytes -= count
        table.outputBytes -= count
        if status == 0 {
            lastDrainMs = iterationMs
            table.stats.bytesOut += UInt64(count)
            usage.bytesOut += UInt64(count)
        }
        guard !isClosed else { return }
        if status < 0 {
            close()
            return
        }
        descriptorMayGo()
        afterOutputDrained()
    }

    func afterOutputDrained() {
        pump()
        if life == .closingAfterFlush && pendingOutputBytes == 0 && streams.isEmpty {
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
