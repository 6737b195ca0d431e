#if canImport(Glibc)
import Glibc
#endif
import FerryLoop
import FerryProtocol

/// A descriptor waiting in a connection's output: it goes to the client attached to the first byte of its frame,
/// which starts at `offset` of `out`.
struct OutgoingDescriptor {
    var offset: Int
    let fd: Int32
    /// Counted in `descriptors.waits` already.
    var waited = false
}

/// Replies whose body is a descriptor (`SCM_RIGHTS`, PROTOCOL.md "bodies as descriptors"). The descriptor must
/// travel with its own frame's first byte, never earlier or later, so that a client pairs descriptors with frames in
/// order: bytes before it are written as usual; the frame's bytes go out with the descriptor in one `sendmsg`, and
/// only once libuv has no copy of earlier bytes queued (they would be overtaken). When the socket is full at that
/// moment, a timer tries again after 1 ms, then 2, 4 … up to 64 ms while the client reads nothing (libuv tells
/// writability only through a write of its own).
extension Connection {
    /// Descriptors one connection may have waiting unsent; past it, bodies go through the socket.
    static let maxUnsentDescriptors = 64

    /// Whether a reply on this connection may carry a descriptor now.
    var canSendDescriptor: Bool { !isClosed && outDescriptors.count < Connection.maxUnsentDescriptors }

    /// A final frame without body bytes whose result names the descriptor (`body_fd: {offset, length}`), which
    /// goes with the frame. Takes the descriptor: it is closed once sent, or when the connection closes.
    func writeResult(id: UInt64, result: JSONObject, descriptor d: BodyDescriptor) {
        guard !isClosed else {
            Glibc.close(d.fd)
            return
        }
        var result = result
        result["body_fd"] = .object(["offset": .int(Int64(d.offset)), "length": .int(Int64(d.length))])
        outDescriptors.append(OutgoingDescriptor(offset: out.count, fd: d.fd))
        appendFinal(id: id, result: result, body: [][...])
    }

    /// `flush` while descriptors wait in the output.
    func flushWithDescriptors() {
        var consumed = 0     // bytes of `out` written or handed to a queued write
        var direct = 0       // of them, written now
        var failed = false
        while consumed < out.count {
            if let mark = outDescriptors.first, mark.offset == consumed {
                // Earlier bytes still queued in libuv would be overtaken: wait for them (`pipeDidWrite`).
                guard queuedWriteBytes == 0 else {
                    noteDescriptorWait()
                    break
                }
                let end = outDescriptors.count > 1 ? outDescriptors[1].offset : out.count
                let n = out.withUnsafeBytes { pipe.tryWrite(UnsafeRawBufferPointer(rebasing: $0[consumed..<end]), attaching: mark.fd) }
                if n < 0 {
                    table.log.debug("conn=\(id) write error (descriptor): \(String(cString: strerror(Int32(-n))))")
                    failed = true
                    break
                }
                if n == 0 {
                    noteDescriptorWait()
                    retryDescriptorSoon()
                    break
                }
                Glibc.close(mark.fd)
                outDescriptors.removeFirst()
                descriptorRetryMs = 1
                consumed += n
                direct += n
                continue
            }
            let end = outDescriptors.first?.offset ?? out.count
            if queuedWriteBytes == 0 {
                let n = out.withUnsafeBytes { pipe.tryWrite(UnsafeRawBufferPointer(rebasing: $0[consumed..<end])) }
                if n < 0 {
                    failed = true
                    break
                }
                consumed += n
                direct += n
                if consumed == end { continue }
            }
            // The kernel is full: queue the bytes up to the next descriptor; its frame waits for that write.
            guard out.withUnsafeBytes({ pipe.write(copying: UnsafeRawBufferPointer(rebasing: $0[consumed..<end])) }) else {
                failed = true
                break
            }
            queuedWriteBytes += end - consumed
            consumed = end
            break
        }
        table.stats.bytesOut += UInt64(direct)
        usage.bytesOut += UInt64(direct)
        table.outputBytes -= direct
        if direct > 0 { lastDrainMs = iterationMs }
        out.removeFirst(consumed)
        for i in outDescriptors.indices { outDescriptors[i].offset -= consumed }
        if failed { return close() }
        afterOutputDrained()
    }

    /// A queued write completed: a descriptor that waited for it can go now.
    func descriptorMayGo() {
        guard !outDescriptors.isEmpty, queuedWriteBytes == 0, !needsFlush, !isClosed else { return }
        needsFlush = true
        table.scheduleFlush(self)
    }

    private func retryDescriptorSoon() {
        if descriptorRetry == nil {
            descriptorRetry = LoopTimer(loop: table.loop) { [weak self] _ in self?.descriptorMayGo() }
        }
        descriptorRetry?.start(afterMs: descriptorRetryMs)
        descriptorRetryMs = min(descriptorRetryMs * 2, 64)
    }

    /// The first descriptor waiting counts once in `descriptors.waits`, however many tries it takes.
    private func noteDescriptorWait() {
        guard !outDescriptors.isEmpty, !outDescriptors[0].waited else { return }
        outDescriptors[0].waited = true
        table.descriptors?.waits += 1
    }

    /// At close: descriptors never sent are closed here.
    func dropDescriptors() {
        for d in outDescriptors { Glibc.close(d.fd) }
        outDescriptors = []
        descriptorRetry?.close()
        descriptorRetry = nil
    }
}
