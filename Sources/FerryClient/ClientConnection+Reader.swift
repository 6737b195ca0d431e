#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFerryIO
import FerryProtocol

/// The connection's reader thread: reads replies, routes each to its waiter by id, and ends the waiters of one
/// read together (one lock for all of them, one count for the outbox), then resumes them outside the lock. While
/// calls it resumed may read the next replies themselves (`ReadBaton`), it leaves the socket to them.
extension ClientConnection {
    /// A final reply read and not yet handed to its waiter. A struct, not a tuple: an array of tuples holding a
    /// `Result` was copied and destroyed through the runtime's generic tuple witnesses (perf: ~4 % of a pipelined
    /// call); `outcome` is an optional so that `finishAll` moves it out (`take`) instead of copying it.
    struct Final {
        let id: UInt64
        var outcome: Result<FerryReply, FerryError>?
        /// Its waiter, found by `finishAll` under the state lock.
        var waiter: Waiter?

        init(_ id: UInt64) { self.id = id }
    }

    /// Adds a final reply to `finals`. Why in two steps: `finals.append(Final(id, outcome))` compiled to a copy of
    /// the whole `Final` into the array's storage and a destroy of the original (the disassembly: outlined copy and
    /// destroy around the append), a retain and a release of each part of the reply; an empty `Final` costs nothing
    /// to copy, and the outcome is then moved into it in place.
    static func append(_ id: UInt64, _ outcome: consuming Result<FerryReply, FerryError>, to finals: inout [Final]) {
        finals.append(Final(id))
        finals[finals.count - 1].outcome = consume outcome
    }

    /// What reading the socket keeps from one read to the next. Touched only by the holder of the `ReadBaton`: the
    /// reader thread, or the call reading in its place (`readInline`).
    final class ReadState: @unchecked Sendable {
        let decoder = FrameDecoder(maxFrameBytes: 65536, maxJSONBytes: 65536)
        /// Descriptors that came with reply frames (`body_fd`), oldest first: each arrives with the first byte of
        /// its frame, so by the time a frame is whole its descriptor is the oldest one here.
        var descriptors = DescriptorQueue()
        var received = [Int32](repeating: -1, count: 16)
        var finals: [Final] = []
        /// A large body being read straight into its call's buffer.
        var direct: DirectBody?
        /// The last frame was read so: the next read is short.
        var afterDirect = false
        /// Why the connection ends, once a read found it so (end of stream, a bad frame, a descriptor dropped).
        var failure: FerryError?
    }

    /// What one read of the socket came to.
    enum ReadOutcome: Equatable {
        /// Replies read (maybe none whole yet). `lent`: calls were resumed and the baton lent to them. `sentHeld`:
        /// held requests took freed slots and wait in the outbox.
        case read(lent: Bool, sentHeld: Bool)
        /// Nothing there yet (or interrupted).
        case nothing
        /// The connection is over (`ReadState.failure` says why).
        case ended
    }

    func readLoop() {
        executor.readerStarted()
        let r = reading
        var socketFull = false
        var sentHeld = false   // finishAll sent held requests (queued from this thread)
        var waited = false     // the last turn waited for a lent baton
        reading: while true {
            credit.waitForRoom(orElse: { executor.hasJobs }, othersWait: { state.withLock { $0.waiters.count > 1 } })
            // Tasks resumed by the last read that prefer this thread run now; what they sent is written at once,
            // with any held requests the read let go.
            if executor.runJobs() > 0 || sentHeld {
                sentHeld = false
                // A lost socket ends the loop through the baton's holder, who reads its end (`writeQueued`).
                socketFull = writeQueued() == .socketFull
                // They may have taken what a stream held; if not, wait for room again before reading.
                if !credit.mayRead { continue }
            }
            let now = Platform.monotonicNanos()
            switch baton.withLock({ $0.threadTurn(nowNs: now) }) {
            case .closed: break reading
            case .wait:
                waitForBaton(ms: baton.withLock { $0.waitMs(nowNs: now) })
                waited = true
                continue
            case .read:
                // A call reading in this thread's place found the connection over (a bad frame, a descriptor
                // dropped): end here, not wait on a socket that may stay quiet.
                if r.failure != nil { break reading }
                if waited {
                    // Back from calls (given back, or taken back from calls that did not run): what they queued
                    // leaves now.
                    waited = false
                    if outbox.holdsFrames { socketFull = writeQueued() == .socketFull }
                }
            }
            switch waitForReplies(socketFull: &socketFull) {
            case .lost: break reading
            case .later: continue
            case .readable: break
            }
            switch readReplies(r) {
            case .ended: break reading
            case .nothing: continue
            case .read(_, let held): sentHeld = held
            }
        }
        baton.withLock { $0.close() }
        r.descriptors.closeAll()
        connectionLost(r.failure ?? FerryError.connection("ferryd closed the connection"))
        executor.readerEnded()
    }

    /// The reader thread's wait while a call holds the baton or may take it: for its wake-up pipe (jobs for
    /// `executor`, the baton given back), at most `ms` (until the loan goes stale).
    private func waitForBaton(ms: Int32) {
        var p = pollfd(fd: executor.wakeFD, events: Int16(POLLIN), revents: 0)
        if poll(&p, 1, executor.hasJobs ? 0 : ms) > 0 { executor.drainWake() }
    }

    /// One read of the socket by the baton's holder, and the frames it completed. Never waits (`MSG_DONTWAIT`):
    /// the reader thread polled first, and a call reading in its place must not block. The read state is not
    /// touched after `finishAll` resumes calls: the last of them may already be reading.
    func readReplies(_ r: ReadState) -> ReadOutcome {
        if r.failure != nil { return .ended }
        let flags = Int32(MSG_DONTWAIT)
        var count: Int32 = 0
        let n: Int
        if let d = r.direct {
            // The rest of a large body, straight into its call's buffer: exactly the bytes still owed at most,
            // so never a byte of the next frame (nor its descriptor, which comes with its first byte).
            n = d.buffer.receive(upTo: d.left) { to, max in
                ferry_recv_with_fds(fd, to, max, &r.received, Int32(r.received.count), &count, flags)
            }
        } else {
            // After a direct body the next frame is likely another chunk: a short read takes its envelope and
            // leaves its body to a direct read, not to this buffer.
            let space = r.decoder.buffer.writableSpace(minimum: 64 * 1024)
            let want = r.afterDirect ? min(space.count, 4096) : space.count
            n = ferry_recv_with_fds(fd, space.baseAddress, want, &r.received, Int32(r.received.count), &count, flags)
        }
        if n == -Int(EINTR) || n == -Int(EAGAIN) { return .nothing }
        if n <= 0 {
            r.failure = FerryError.connection("ferryd closed the connection")
            return .ended
        }
        if count < 0 {
            r.failure = FerryError(.resourceExhausted, "a descriptor ferryd sent was dropped by the kernel (this process is out of descriptors)")
            return .ended
        }
        for k in 0..<Int(count) { r.descriptors.push(r.received[k]) }
        if r.direct != nil {
            if directBodyReceived(n, &r.direct!, finals: &r.finals) { r.direct = nil }
            return finishAll(r)
        }
        r.decoder.buffer.didWrite(n)
        (r.decoder.maxFrameBytes, r.decoder.maxJSONBytes) = frameLimits
        do {
            // Views into the read buffer: a chunk's body is copied once, into its call's buffer.
            while let outcome = try r.decoder.nextView({ dispatch($0, descriptors: &r.descriptors, finals: &r.finals) }) {
                if let lost = outcome {
                    r.failure = lost
                    break
                }
            }
            if r.failure == nil {
                r.direct = try r.decoder.openFrameView(minimumLeft: ClientConnection.directBodyBytes) { openDirectBody($0) }
                r.afterDirect = r.direct != nil
            }
        } catch {
            r.failure = FerryError(.protocolError, "ferryd sent a bad frame: \(error)")
        }
        // Replies read before a bad frame still reach their calls (the rest fail with the connection). Whether it
        // failed is read before `finishAll`: once it lends the baton, `r` is the next holder's.
        let failed = r.failure != nil
        let outcome = finishAll(r)
        return failed ? .ended : outcome
    }

    enum Wait { case readable, later, lost }

    /// Waits until a reply can be read (`readable`), or until there is something else to do first (`later`): jobs
    /// to run for `executor`, or frames to write. Frames wait in the outbox for resumed calls to run; one whose
    /// executor is slow would hold them back, so while any may be queued the wait is short, and frames still there
    /// afterwards are written from here — as much as the socket takes at once, never waiting: a blocked write here
    /// would stop the reading that lets ferryd go on reading requests.
    /// `socketFull`: the last write from here left frames the socket did not take; the wait then also ends when
    /// it takes more.
    private func waitForReplies(socketFull: inout Bool) -> Wait {
        // Frames another thread wrote meanwhile (a call reading in this thread's place): nothing waits for POLLOUT,
        // which would otherwise end every wait at once.
        if socketFull && !outbox.holdsFrames { socketFull = false }
        var p = (pollfd(fd: fd, events: Int16(POLLIN) | (socketFull ? Int16(POLLOUT) : 0), revents: 0),
                 pollfd(fd: executor.wakeFD, events: Int16(POLLIN), revents: 0))
        let timeout: Int32 = executor.hasJobs ? 0 : outbox.mayHoldFrames ? Outbox.staleAfterMs : -1
        let ready = withUnsafeMutableBytes(of: &p) { raw in
            poll(raw.baseAddress!.assumingMemoryBound(to: pollfd.self), 2, timeout)
        }
        if ready < 0 { return errno == EINTR ? .later : .lost }
        if p.1.revents != 0 { executor.drainWake() }
        if (ready == 0 || p.0.revents & Int16(POLLOUT) != 0) && outbox.holdsFrames {
            let flushed = outbox.flushAvailable()
            if flushed == .lost { return .lost }
            socketFull = flushed == .socketFull
        }
        return p.0.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 ? .readable : .later
    }

    /// Ends the waiters of the final replies of one read: removed under one lock, counted as pending in the
    /// outbox at once, resumed outside the lock. Why together: the tasks they resume take the same lock to send,
    /// and a lock taken once a reply was the reader's most contended cost (its spinning, measured). Resuming calls
    /// lends the baton first (the last of them may read next), so nothing of `r` is touched after that.
    private func finishAll(_ r: ReadState) -> ReadOutcome {
        guard !r.finals.isEmpty else { return .read(lent: false, sentHeld: false) }
        // Taken whole, and the next read's array made now (as large: grown from empty, it was copied five times a
        // read): once calls are resumed, `r` is the next holder's.
        var finals: [Final] = []
        swap(&finals, &r.finals)
        r.finals.reserveCapacity(finals.count)
        var freed = 0, stillOnWire = 0, calls = 0
        state.withLock { s in
            for k in finals.indices {
                if s.cancelIDs.isEmpty || s.cancelIDs.remove(finals[k].id) == nil { freed += 1 }
                let waiter = s.waiters.removeValue(forKey: finals[k].id)
                if case .call? = waiter { calls += 1 }
                finals[k].waiter = waiter
            }
            stillOnWire = s.onWire - freed
        }
        // Lent only when the last call may find replies: other requests are on the wire, or the batch is larger
        // than the outbox's, so that its first requests leave (`Outbox.batchRequests`) well before its last call
        // reads. Otherwise (one call at a time, a few) every request of the batch leaves with the last call's own
        // write, its read could only come back empty and wake the reader thread for nothing: a thread switch more
        // per call (measured). Nor once the connection is ending: its end is the holder's to handle.
        let mayFindReplies = stillOnWire > 0 || calls > Outbox.batchRequests
        let lends = calls > 0 && mayFindReplies && lendsBaton && r.failure == nil
        if calls > 0 { outbox.resuming(calls) }
        if lends { baton.withLock { $0.lend() } }
        for k in finals.indices {
            if let waiter = finals[k].waiter, let outcome = finals[k].outcome.take() {
                deliver(outcome, to: waiter, counted: true)
            }
        }
        // Held requests take the freed slots; queued from this thread, they are written at the loop's next turn.
        // Never waiting on a write: this is the baton's holder (or was, a moment ago), whom ferryd may wait for.
        return .read(lent: lends, sentHeld: freed > 0 && slotsFreed(freed, blocking: false) > 0)
    }

    /// Reads one frame: a final reply joins `finals`, an event goes to its waiter now. Returns the error that ends
    /// the connection when descriptors and frames no longer pair (PROTOCOL.md §5: a frame that names a descriptor
    /// none came for, or one that cannot be read while descriptors wait, which might have claimed one).
    private func dispatch(_ frame: FrameView, descriptors: inout DescriptorQueue, finals: inout [Final]) -> FerryError? {
        guard let reply = ReplyEnvelope.parse(frame.json, maxDepth: 64) else {
            return descriptors.isEmpty ? nil : FerryError(.protocolError, "ferryd sent a reply this client cannot read while descriptors were due")
        }
        switch consume reply {
        case .result(let id, let result):
            switch descriptors.claim(for: result) {
            case .none: ClientConnection.append(id, .success(FerryReply(result: result, body: bytes(frame.body))), to: &finals)
            case .file(let file): ClientConnection.append(id, .success(FerryReply(result: result, body: [], file: file)), to: &finals)
            case .missing(let lost): return lost
            case .unreadable(let error): ClientConnection.append(id, .failure(error), to: &finals)
            }
        case .error(let id, let e):
            if id == 0 {
                // Names no request. A protocol error or a refusal ends the connection (EOF follows); any other
                // id-0 error answers an envelope this client never sends (its requests are checked before sending).
                if [.protocolError, .permissionDenied, .resourceExhausted].contains(e.code) { return e }
            } else {
                ClientConnection.append(id, .failure(e), to: &finals)
            }
        case .event(let id, let name, let data):
            deliverEvent(id: id, name: name, data: data, body: frame.body)
        }
        return nil
    }

    /// A copy of bytes in the read buffer (typed: a raw buffer would be appended a byte at a time).
    private func bytes(_ raw: UnsafeRawBufferPointer) -> [UInt8] { Array(raw.assumingMemoryBound(to: UInt8.self)) }

    private func deliverEvent(id: UInt64, name: String, data: JSONObject, body: UnsafeRawBufferPointer) {
        let stream = state.withLock { s -> StreamWaiter? in
            switch s.waiters[id] {
            case .call(let c, let chunks)?:
                // A plain call joins chunk events into the final body and drops other events.
                if name == EventName.chunk.rawValue {
                    if let chunks {
                        chunks.append(body)
                    } else {
                        let made = ChunkBuffer(size: data["size"]?.intValue)
                        made.append(body)
                        s.waiters[id] = .call(c, chunks: made)
                    }
                }
                return nil
            case .stream(let w)?: return w
            case nil: return nil
            }
        }
        guard let stream else { return }
        yield(.event(name: name, data: data, body: bytes(body)), to: stream)
    }

    /// A stream's event, its body counted against the connection's read credit until the stream's reader takes it.
    func yield(_ event: FerryStreamItem, to stream: StreamWaiter) {
        guard case .event(_, _, let body) = event else { return }
        stream.account.delivered(body.count)
        if case .terminated = stream.continuation.yield(event) { stream.account.consumed(body.count) }
    }
}

/// Descriptors received and not yet claimed by their frames, oldest first (the reader thread's own).
struct DescriptorQueue {
    private var fds: [Int32] = []
    private var head = 0

    mutating func push(_ fd: Int32) { fds.append(fd) }

    var isEmpty: Bool { head == fds.count }

    mutating func pop() -> Int32? {
        guard head < fds.count else { return nil }
        defer {
            head += 1
            if head == fds.count { (fds, head) = ([], 0) }
        }
        return fds[head]
    }

    /// The connection ended: descriptors no frame claimed are closed.
    mutating func closeAll() {
        while let fd = pop() { close(fd) }
    }

    /// What a result's `body_fd` claims from the queue (PROTOCOL.md §5: its descriptor is the oldest one received).
    enum Claim {
        /// The result names no descriptor.
        case none
        case file(BodyFile)
        /// Named, but none came: descriptors and frames no longer pair, and the connection must end.
        case missing(FerryError)
        /// Named without its offset and length: that call fails (the descriptor taken is closed with the file).
        case unreadable(FerryError)
    }

    /// Takes the descriptor `result` names, if it names one, as a `BodyFile` (which owns and closes it).
    mutating func claim(for result: JSONObject) -> Claim {
        guard let named = result["body_fd"]?.objectValue else { return .none }
        guard let fd = pop() else { return .missing(FerryError(.protocolError, "ferryd named a body descriptor that did not arrive")) }
        let file = BodyFile(fd: fd, offset: Int(named["offset"]?.intValue ?? -1), length: Int(named["length"]?.intValue ?? -1))
        guard file.offset >= 0, file.length >= 0 else {
            return .unreadable(FerryError(.protocolError, "ferryd named a body descriptor without its offset and length"))
        }
        return .file(file)
    }
}
