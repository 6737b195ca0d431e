#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFerryIO
import FerryProtocol
import Synchronization

/// One socket shared by many concurrent calls: requests leave through the `Outbox` (batched while resumed calls are
/// still to run); the reader thread, or the last call of a batch in its place (`ReadBaton`), routes every reply to
/// its waiter by id. Waiters are resumed outside the lock.
final class ClientConnection: Sendable {
    /// What a call's continuation is resumed with: its outcome, and whether a read resumed it (then the outbox
    /// counts it as pending until the call's task runs again and says so with `callReturned`).
    struct Delivery: Sendable {
        var outcome: Result<FerryReply, FerryError>
        var counted: Bool
    }
    typealias CallContinuation = UnsafeContinuation<Delivery, Never>

    enum Waiter {
        /// `chunks`: the bodies of the call's `chunk` events so far, once one came.
        case call(CallContinuation, chunks: ChunkBuffer?)
        case stream(StreamWaiter)
    }

    /// A stream's continuation and its share of the read credit, boxed. Why: the continuation's layout is the
    /// standard library's to change (a resilient type), and held inline it made `Waiter` a type of unknown size, so
    /// that every copy of every waiter — plain calls' too — went through the runtime's value witnesses (perf: ~6 %
    /// of a pipelined call).
    final class StreamWaiter: Sendable {
        let continuation: AsyncThrowingStream<FerryStreamItem, any Error>.Continuation
        let account: StreamAccount

        init(_ continuation: AsyncThrowingStream<FerryStreamItem, any Error>.Continuation, _ account: StreamAccount) {
            self.continuation = continuation
            self.account = account
        }
    }

    struct State {
        var waiters = IDTable<Waiter>()
        /// Requests sent whose final reply has not come, `cancel`s left out (the server exempts them from its
        /// `max_in_flight`, and so does this count).
        var onWire = 0
        /// Requests held back while `onWire` is at the server's `max_in_flight`, oldest first (`held[heldHead...]`):
        /// sent as replies free their slots, instead of being refused with `resource_exhausted`.
        var held: [(envelope: RequestEnvelope, body: [UInt8])] = []
        var heldHead = 0
        /// Ids of `cancel` requests sent: their replies free no slot.
        var cancelIDs: Set<UInt64> = []

        /// Takes a slot for the request (true: send it now), or holds it behind the others.
        mutating func admit(_ envelope: RequestEnvelope, _ body: [UInt8], limit: Int) -> Bool {
            guard onWire < limit, heldHead == held.count else {
                held.append((envelope, body))
                return false
            }
            onWire += 1
            return true
        }
        /// Set once the connection is gone; every later call fails with it.
        var closedError: FerryError?
    }

    let fd: Int32
    let path: String
    let state = ThreadLock(State())
    let outbox: Outbox
    /// Body bytes streams may hold unconsumed before the reader stops reading the socket.
    let credit: ReadCredit
    /// Runs the tasks that prefer it on the reader thread (`FerryClient.executor`).
    let executor: ConnectionExecutor
    /// Who reads the socket next (the reader thread, or the last call of a batch), and what reading keeps.
    let baton = ThreadLock(ReadBaton())
    let reading = ReadState()
    /// Whether the baton is ever lent: not without the executor's wake-up pipe, through which a call gives it back.
    let lendsBaton: Bool

    init(path: String) throws(FerryError) {
        self.path = path
        fd = try SocketIO.connect(path: path)
        outbox = Outbox(fd: fd)
        let credit = ReadCredit(limit: 8 * 1024 * 1024)
        self.credit = credit
        executor = ConnectionExecutor(onWake: { credit.nudge() })
        lendsBaton = executor.wakeFD >= 0
        let me = self
        Platform.startThread { me.readLoop() }
    }

    /// The server's limits, from `hello`; read for every request and every read, so without a lock.
    private let maxFrameBytes = Atomic<Int>(65536)
    private let maxJSONBytes = Atomic<Int>(65536)
    private let maxNesting = Atomic<Int>(32)

    private let maxInFlight = Atomic<Int>(256)

    func setLimits(_ limits: ProtocolLimits) {
        maxInFlight.store(max(1, limits.maxInFlight), ordering: .relaxed)
        maxFrameBytes.store(limits.maxFrameBytes, ordering: .relaxed)
        maxJSONBytes.store(limits.maxJSONBytes, ordering: .relaxed)
        maxNesting.store(limits.maxNesting, ordering: .relaxed)
    }

    /// The frame and envelope sizes the server accepts (and sends).
    var frameLimits: (frame: Int, json: Int) {
        (maxFrameBytes.load(ordering: .relaxed), maxJSONBytes.load(ordering: .relaxed))
    }

    /// Request ids, from 1.
    private let nextID = Atomic<UInt64>(1)

    func allocateID() -> UInt64 { nextID.wrappingAdd(1, ordering: .relaxed).oldValue }

    /// Registers the waiter of a request and sends it, or holds it while the server's `max_in_flight` requests of
    /// this connection are on the wire (one lock for both). Returns the error to fail the waiter with instead, when
    /// the connection is closed. A caller cancelled before this finds no waiter to end (`cancel`), so it checks
    /// `Task.isCancelled` after.
    func start(_ envelope: RequestEnvelope, body: [UInt8], waiter: Waiter) -> FerryError? {
        let limit = maxInFlight.load(ordering: .relaxed)
        let outcome = state.withLock { s -> (FerryError?, sendNow: Bool, dropped: UInt64) in
            if let e = s.closedError { return (e, false, 0) }
            s.waiters[envelope.id] = waiter
            return (nil, s.admit(envelope, body, limit: limit), waitersDropped.load(ordering: .sequentiallyConsistent))
        }
        if outcome.sendNow && !transmit(envelope, body: body, droppedAtStart: outcome.dropped) { slotsFreed(1) }
        return outcome.0
    }

    /// Waiters ended before their reply (cancelled, failed here, the connection closed), counted up under the
    /// state lock as they are removed. Why: a request is sent only if its waiter is still there (a cancelled call's
    /// request must not follow its `cancel`), and looking that up took the state lock again inside the outbox's for
    /// every request. A request whose call registered its waiter when this count was what it still is when the
    /// request is queued has not lost it: any removal since would have raised the count first, and the `cancel`
    /// that follows a removal is queued after (the outbox lock is held meanwhile).
    private let waitersDropped = Atomic<UInt64>(0)

    /// Removes the waiter of `id` before its reply (`waitersDropped`).
    private func dropWaiter(_ id: UInt64) -> Waiter? {
        state.withLock { s in
            let waiter = s.waiters.removeValue(forKey: id)
            if waiter != nil { waitersDropped.add(1, ordering: .sequentiallyConsistent) }
            return waiter
        }
    }

    /// Tells the daemon to drop request `id`. A `cancel` is exempt from `max_in_flight` (here as in the daemon),
    /// so it goes at once, and its reply frees no slot.
    private func sendCancel(for id: UInt64) {
        let envelope = RequestEnvelope(id: allocateID(), op: "cancel", args: ["id": .int(Int64(id))])
        state.withLock { _ = $0.cancelIDs.insert(envelope.id) }
        _ = transmit(envelope, body: [])
    }

    /// `count` requests got their final replies (or were never sent): held requests take their slots. Returns how
    /// many were sent.
    @discardableResult
    /// `blocking`: whether the sends may wait for the socket (not on the reader thread, nor from the baton's
    /// holder: ferryd may be waiting for them to read).
    func slotsFreed(_ count: Int, blocking: Bool? = nil) -> Int {
        var free = count, sent = 0
        while free > 0 {
            let limit = maxInFlight.load(ordering: .relaxed)
            let next = state.withLock { s -> [(envelope: RequestEnvelope, body: [UInt8])] in
                s.onWire -= free
                var taken: [(envelope: RequestEnvelope, body: [UInt8])] = []
                while s.onWire < limit && s.heldHead < s.held.count {
                    taken.append(s.held[s.heldHead])
                    s.held[s.heldHead] = (s.held[s.heldHead].envelope, [])   // the body goes with the request
                    s.heldHead += 1
                    s.onWire += 1
                }
                if s.heldHead == s.held.count { (s.held, s.heldHead) = ([], 0) }
                return taken
            }
            // A held request no longer wanted (cancelled meanwhile) or refused is not sent: its slot frees again.
            free = next.reduce(0) { n, r in transmit(r.envelope, body: r.body, blocking: blocking) ? n : n + 1 }
            sent += next.count - free
        }
        return sent
    }

    /// Writes (or queues) one request's frames; false when nothing was sent. A request the server would refuse as
    /// a protocol error (too large, too deep) fails here instead, so it cannot take the shared connection down.
    /// `droppedAtStart`: `waitersDropped` when the call registered its waiter (nil: look the waiter up).
    /// `blocking`: whether the write may wait for the socket; by default, unless on the reader thread.
    private func transmit(_ envelope: RequestEnvelope, body: [UInt8], droppedAtStart: UInt64? = nil,
                          blocking: Bool? = nil) -> Bool {
        let nesting = maxNesting.load(ordering: .relaxed), limits = frameLimits
        if envelope.depth > nesting {
            finish(envelope.id, with: .failure(FerryError(.invalidArgument, "arguments nested deeper than the server's limit of \(nesting)")))
            return false
        }
        // A call cancelled between registering and sending is not sent at all (cancel requests have no waiter).
        let id = envelope.id, isCancel = envelope.op == "cancel", blocking = blocking ?? !executor.onReaderThread
        var wanted = false
        let stillWanted = {
            wanted = isCancel || droppedAtStart == self.waitersDropped.load(ordering: .sequentiallyConsistent)
                || self.state.withLock { $0.waiters[id] != nil }
            return wanted
        }
        // The common case, one small frame, is encoded straight into the outbox.
        var oneFrameFits = true
        if body.count <= ClientConnection.inlineBodyBytes {
            var refusal: OneFrame = .appended
            let sent = outbox.send(if: stillWanted, blocking: blocking) { bytes in
                refusal = ClientConnection.appendFrame(envelope, body: body, limits: limits, to: &bytes)
                return refusal == .appended
            }
            switch refusal {
            case .appended:
                if !sent { connectionLost(closed) }
                return wanted
            case .refused(let e):
                finish(id, with: .failure(e))
                return false
            case .needsFrames: oneFrameFits = false
            }
        }
        let frames: [[UInt8]]
        let framed = oneFrameFits
            ? ClientConnection.frames(envelope, body: body, maxFrameBytes: limits.frame, maxJSONBytes: limits.json)
            : ClientConnection.partFrames(envelope, body: body, maxFrameBytes: limits.frame, maxJSONBytes: limits.json)
        switch framed {
        case .success(let f): frames = f
        case .failure(let e):
            finish(id, with: .failure(e))
            return false
        }
        if !outbox.send(frames, if: stillWanted, blocking: blocking) { connectionLost(closed) }
        return wanted
    }

    /// Requests with a body up to this size are tried as one frame encoded in place (`appendFrame`).
    static let inlineBodyBytes = 16 * 1024

    enum OneFrame: Equatable {
        case appended
        case refused(FerryError)
        /// Larger than a frame: sent as several (`frames`).
        case needsFrames
    }

    /// Appends the request as one frame, or nothing when it cannot be one (the same checks as `frames`).
    static func appendFrame(_ envelope: RequestEnvelope, body: [UInt8], limits: (frame: Int, json: Int),
                            to bytes: inout [UInt8]) -> OneFrame {
        let mark = bytes.count
        body.withUnsafeBytes { b in FrameEncoder.append(to: &bytes, body: b, writeJSON: envelope.write) }
        let frameBytes = bytes.count - mark, jsonBytes = frameBytes - ProtocolLimits.headerBytes - body.count
        guard jsonBytes <= limits.json, frameBytes <= limits.frame else {
            bytes.removeSubrange(mark...)
            return jsonBytes > limits.json ? .refused(tooLarge(jsonBytes, limits.json)) : .needsFrames
        }
        return .appended
    }

    /// A failed write: the connection is gone.
    var closed: FerryError { FerryError.connection("the connection to ferryd at \(path) is closed") }

    /// A call's continuation is resumed through here. `counted`: resumed by the baton's holder (the reader thread,
    /// or a call reading in its place), which has counted the call as pending in the outbox (a task that will run
    /// again and may send, `callReturned`). Only the holder counts: the reader checks for pending calls before each
    /// wait, and a count raised behind its back could leave frames queued while it sleeps.
    private func resume(_ c: CallContinuation, with outcome: consuming Result<FerryReply, FerryError>, counted: Bool) {
        c.resume(returning: Delivery(outcome: outcome, counted: counted))
    }

    /// Fails a call whose waiter could not be registered.
    func fail(_ c: CallContinuation, _ error: FerryError) {
        resume(c, with: .failure(error), counted: false)
    }

    /// The frames of one request: one when it fits, else the envelope with `"more": true` and the body's first part,
    /// then continuation frames `{"id", "more"}` with the next parts (PROTOCOL.md section 5). The common case, one
    /// frame, is written in one buffer: header, envelope (written directly, no tree) and body.
    static func frames(_ envelope: RequestEnvelope, body: [UInt8], maxFrameBytes: Int, maxJSONBytes: Int) -> Result<[[UInt8]], FerryError> {
        if ProtocolLimits.headerBytes + body.count < maxFrameBytes {
            var one: [UInt8] = []
            one.reserveCapacity(ProtocolLimits.headerBytes + 96 + body.count)
            switch appendFrame(envelope, body: body, limits: (maxFrameBytes, maxJSONBytes), to: &one) {
            case .appended: return .success([one])
            case .refused(let e): return .failure(e)
            case .needsFrames: break
            }
        }
        return partFrames(envelope, body: body, maxFrameBytes: maxFrameBytes, maxJSONBytes: maxJSONBytes)
    }

    /// The request in parts (`frames` when one frame cannot hold it).
    static func partFrames(_ envelope: RequestEnvelope, body: [UInt8], maxFrameBytes: Int, maxJSONBytes: Int) -> Result<[[UInt8]], FerryError> {
        var first = envelope
        first.more = true
        var firstJSON: [UInt8] = []
        first.write(to: &firstJSON)
        if firstJSON.count > maxJSONBytes { return .failure(tooLarge(firstJSON.count, maxJSONBytes)) }
        // Room left for body bytes once the header and an envelope (with some slack for digits) are in.
        let room = maxFrameBytes - ProtocolLimits.headerBytes - firstJSON.count - 64
        guard room >= 1024 else {
            return .failure(FerryError(.resourceExhausted, "the request envelope leaves no room for its body in a frame of \(maxFrameBytes) bytes"))
        }
        var frames = [frame({ $0.append(contentsOf: firstJSON) }, body[..<room])]
        var offset = room
        while offset < body.count {
            let end = min(body.count, offset + room)
            let part = ContinuationEnvelope(id: envelope.id, more: end < body.count)
            frames.append(frame({ JSONWriter.write(part.json, to: &$0) }, body[offset..<end]))
            offset = end
        }
        return .success(frames)
    }

    private static func tooLarge(_ bytes: Int, _ limit: Int) -> FerryError {
        FerryError(.resourceExhausted, "request envelope of \(bytes) bytes exceeds the server's limit of \(limit)")
    }

    /// One frame from its JSON writer and a slice of the body, without copying the slice first.
    private static func frame(_ writeJSON: (inout [UInt8]) -> Void, _ body: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(ProtocolLimits.headerBytes + 96 + body.count)
        body.withUnsafeBytes { b in FrameEncoder.append(to: &out, body: b, writeJSON: writeJSON) }
        return out
    }

    /// The calling task was cancelled: fail the waiter now and tell the server to stop the work.
    func cancel(_ id: UInt64) {
        guard let waiter = dropWaiter(id) else { return }
        deliver(.failure(ClientConnection.cancelled), to: waiter, counted: false)
        sendCancel(for: id)
    }

    static let cancelled = FerryError(.cancelled, "the calling task was cancelled")

    /// Ends the waiter of `id` (if still there) with an error, from any thread but the reader's (which ends its
    /// replies' waiters in batches, `finishAll`).
    func finish(_ id: UInt64, with outcome: Result<FerryReply, FerryError>) {
        guard let waiter = dropWaiter(id) else { return }
        deliver(outcome, to: waiter, counted: false)
    }

    /// Ends `waiter` with a reply or an error. A call's reply body follows the bodies of the chunk events that came
    /// before it.
    ///
    /// Why `consuming` and a switch on the waiter alone: a `switch (waiter, outcome)` built a tuple, a copy of the
    /// outcome (its reply's arrays retained, then released), for every reply.
    func deliver(_ outcome: consuming Result<FerryReply, FerryError>, to waiter: Waiter, counted: Bool) {
        switch waiter {
        case .call(let c, nil): resume(c, with: outcome, counted: counted)
        case .call(let c, let chunks?):
            switch consume outcome {
            case .success(var reply):
                // The final part joins the chunks' buffer in place (not a new buffer for the whole body).
                reply.body.withUnsafeBytes { chunks.append($0) }
                reply.body = chunks.take()
                resume(c, with: .success(reply), counted: counted)
            case .failure(let e): resume(c, with: .failure(e), counted: counted)
            }
        case .stream(let w):
            switch consume outcome {
            case .success(let reply):
                w.continuation.yield(.final(reply))
                w.continuation.finish()
            case .failure(let e): w.continuation.finish(throwing: e)
            }
        }
    }

    func close() {
        connectionLost(FerryError.connection("the client closed the connection"))
    }

    /// Fails every waiter and wakes the reader thread. The descriptor itself is closed only in `deinit`: closing it
    /// earlier would let the number be reused while a late `send` or `shutdown` could still reach it.
    func connectionLost(_ error: FerryError) {
        let waiters = state.withLock { s -> [Waiter] in
            if s.closedError == nil { s.closedError = error }
            (s.held, s.heldHead) = ([], 0)
            waitersDropped.add(1, ordering: .sequentiallyConsistent)
            return s.waiters.removeAll()
        }
        credit.open()
        shutdown(fd, Int32(SHUT_RDWR))
        // The reader may be waiting for a lent baton, not on the socket: it takes it back and reads the end.
        baton.withLock { $0.connectionClosing() }
        executor.wakeReader()
        for w in waiters {
            switch w {
            case .call(let c, _): resume(c, with: .failure(error), counted: false)
            case .stream(let w): w.continuation.finish(throwing: error)
            }
        }
    }

    deinit { Platform.close(fd) }
}
