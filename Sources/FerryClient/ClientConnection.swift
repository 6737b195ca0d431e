#if canImport(Glibc)
import Glibc
#endif
import CFerryIO
import FerryProtocol
import Synchronization

/// One socket shared by many concurrent calls: requests leave through the `Outbox` (batched while resumed calls are
/// still to run), one reader thread routes every reply to its waiter by id. Waiters are resumed outside the lock.
final class ClientConnection: Sendable {
    /// What a call's continuation is resumed with: its outcome, and whether the reader thread resumed it (then the
    /// outbox counts it as pending until the call's task runs again and says so with `callReturned`).
    struct Delivery: Sendable {
        var outcome: Result<FerryReply, FerryError>
        var counted: Bool
    }
    typealias CallContinuation = UnsafeContinuation<Delivery, Never>

    enum Waiter {
        case call(CallContinuation, chunks: [UInt8])
        case stream(AsyncThrowingStream<FerryStreamItem, any Error>.Continuation, StreamAccount)
    }

    struct State {
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 1
        /// Ids handed out whose waiter is not registered yet.
        var unregistered: Set<UInt64> = []
        /// Ids whose task was cancelled before the waiter was registered.
        var cancelledEarly: Set<UInt64> = []
        /// Set once the connection is gone; every later call fails with it.
        var closedError: FerryError?
        var maxFrameBytes = 65536
        var maxJSONBytes = 65536
        var maxNesting = 32
    }

    let fd: Int32
    let path: String
    private let state = Mutex(State())
    private let outbox: Outbox
    /// Body bytes streams may hold unconsumed before the reader stops reading the socket.
    let credit = ReadCredit(limit: 8 * 1024 * 1024)

    init(path: String) throws(FerryError) {
        self.path = path
        fd = try SocketIO.connect(path: path)
        outbox = Outbox(fd: fd)
        let me = self
        SocketIO.startThread { me.readLoop() }
    }

    func setLimits(_ limits: ProtocolLimits) {
        state.withLock {
            $0.maxFrameBytes = limits.maxFrameBytes
            $0.maxJSONBytes = limits.maxJSONBytes
            $0.maxNesting = limits.maxNesting
        }
    }

    func allocateID() -> UInt64 {
        state.withLock { s in
            defer { s.nextID += 1 }
            s.unregistered.insert(s.nextID)
            return s.nextID
        }
    }

    /// Registers a waiter for `id`; returns the error to fail it with instead, when the connection is closed or the
    /// caller was already cancelled.
    func register(_ id: UInt64, _ waiter: Waiter) -> FerryError? {
        state.withLock { s in
            s.unregistered.remove(id)
            if let e = s.closedError { return e }
            if s.cancelledEarly.remove(id) != nil { return FerryError(.cancelled, "the calling task was cancelled") }
            s.waiters[id] = waiter
            return nil
        }
    }

    /// Sends one request frame. Failures end the request's waiter. A request the server would refuse as a
    /// protocol error (too large, too deep) fails here instead, so it cannot take the shared connection down.
    func send(_ envelope: RequestEnvelope, body: [UInt8]) {
        let limits = state.withLock { ($0.maxFrameBytes, $0.maxJSONBytes, $0.maxNesting) }
        if envelope.depth > limits.2 {
            return finish(envelope.id, with: .failure(FerryError(.invalidArgument, "arguments nested deeper than the server's limit of \(limits.2)")))
        }
        let frames: [[UInt8]]
        switch ClientConnection.frames(envelope, body: body, maxFrameBytes: limits.0, maxJSONBytes: limits.1) {
        case .success(let f): frames = f
        case .failure(let e): return finish(envelope.id, with: .failure(e))
        }
        // A call cancelled between registering and sending is not sent at all (cancel requests have no waiter).
        let id = envelope.id, isCancel = envelope.op == "cancel"
        let sent = outbox.send(frames, if: { isCancel || state.withLock { $0.waiters[id] != nil } })
        if !sent { connectionLost(closed) }
    }

    /// A failed write: the connection is gone.
    private var closed: FerryError { FerryError.connection("the connection to ferryd at \(path) is closed") }

    /// A call's continuation is resumed through here. Resumed by the reader thread, the outbox counts the call as
    /// pending (a task that will run again and may send). Only the reader counts: it checks for pending calls
    /// before each wait, and a count raised behind its back could leave frames queued while it sleeps.
    private func resume(_ c: CallContinuation, with outcome: Result<FerryReply, FerryError>, counted: Bool) {
        if counted { outbox.resuming() }
        c.resume(returning: Delivery(outcome: outcome, counted: counted))
    }

    /// The task of a resumed call runs again: the last of a batch writes the requests the others queued.
    func callReturned() {
        if !outbox.resumed() { connectionLost(closed) }
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
            let one = frame(envelope.write, body[...])
            let jsonBytes = one.count - ProtocolLimits.headerBytes - body.count
            if jsonBytes > maxJSONBytes { return .failure(tooLarge(jsonBytes, maxJSONBytes)) }
            if one.count <= maxFrameBytes { return .success([one]) }
        }
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
        let wasPending = state.withLock { s -> Bool in
            if s.waiters[id] != nil { return true }
            if s.unregistered.contains(id) { s.cancelledEarly.insert(id) }
            return false
        }
        guard wasPending else { return }
        finish(id, with: .failure(FerryError(.cancelled, "the calling task was cancelled")))
        let cancelID = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        send(RequestEnvelope(id: cancelID, op: "cancel", args: ["id": .int(Int64(id))]), body: [])
    }

    /// Ends the waiter of `id` (if still there) with a reply or an error. A call's reply body follows the bodies of
    /// the chunk events that came before it. `fromReader`: called by the reader thread (see `resume`).
    func finish(_ id: UInt64, with outcome: Result<FerryReply, FerryError>, fromReader: Bool = false) {
        guard let waiter = state.withLock({ $0.waiters.removeValue(forKey: id) }) else { return }
        switch (waiter, outcome) {
        case (.call(let c, let chunks), .success(var reply)) where !chunks.isEmpty:
            reply.body = chunks + reply.body
            resume(c, with: .success(reply), counted: fromReader)
        case (.call(let c, _), _): resume(c, with: outcome, counted: fromReader)
        case (.stream(let c, _), .success(let reply)):
            c.yield(.final(reply))
            c.finish()
        case (.stream(let c, _), .failure(let e)): c.finish(throwing: e)
        }
    }

    func close() {
        connectionLost(FerryError.connection("the client closed the connection"))
    }

    /// Fails every waiter and wakes the reader thread. The descriptor itself is closed only in `deinit`: closing it
    /// earlier would let the number be reused while a late `send` or `shutdown` could still reach it.
    private func connectionLost(_ error: FerryError) {
        let waiters = state.withLock { s -> [UInt64: Waiter] in
            if s.closedError == nil { s.closedError = error }
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        credit.open()
        shutdown(fd, Int32(SHUT_RDWR))
        for (_, w) in waiters {
            switch w {
            case .call(let c, _): resume(c, with: .failure(error), counted: false)
            case .stream(let c, _): c.finish(throwing: error)
            }
        }
    }

    // MARK: Reader thread

    private func readLoop() {
        var decoder = FrameDecoder(maxFrameBytes: 65536, maxJSONBytes: 65536)
        var failure = FerryError.connection("ferryd closed the connection")
        // Descriptors that came with reply frames (`body_fd`), oldest first: each arrives with the first byte of its
        // frame, so by the time a frame is whole its descriptor is the oldest one here.
        var descriptors = DescriptorQueue()
        var received = [Int32](repeating: -1, count: 16)
        reading: while true {
            credit.waitForRoom()
            if !waitForReplies() { continue }
            let space = decoder.buffer.writableSpace(minimum: 64 * 1024)
            var count: Int32 = 0
            let n = ferry_recv_with_fds(fd, space.baseAddress, space.count, &received, Int32(received.count), &count)
            if n == -Int(EINTR) { continue }
            if n <= 0 { break }
            if count < 0 {
                failure = FerryError(.resourceExhausted, "a descriptor ferryd sent was dropped by the kernel (this process is out of descriptors)")
                break
            }
            for k in 0..<Int(count) { descriptors.push(received[k]) }
            decoder.buffer.didWrite(n)
            (decoder.maxFrameBytes, decoder.maxJSONBytes) = state.withLock { ($0.maxFrameBytes, $0.maxJSONBytes) }
            do {
                while let frame = try decoder.next() {
                    if let lost = dispatch(frame, descriptors: &descriptors) {
                        failure = lost
                        break reading
                    }
                }
            } catch {
                failure = FerryError(.protocolError, "ferryd sent a bad frame: \(error)")
                break reading
            }
        }
        descriptors.closeAll()
        connectionLost(failure)
    }

    deinit { Glibc.close(fd) }

    /// Waits until a reply can be read; false when it gave up first to have queued frames written. Frames wait in
    /// the outbox for resumed calls to run; one whose executor is slow would hold them back, so while any may be
    /// queued the wait is short, and frames still there afterwards are written by a task (never by this thread: a
    /// blocked write here would stop the reading that lets ferryd go on reading requests).
    private func waitForReplies() -> Bool {
        guard outbox.mayHoldFrames else { return true }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&p, 1, Outbox.staleAfterMs) != 0 { return true }
        if outbox.holdsFrames {
            let me = self
            Task.detached { if !me.outbox.flush() { me.connectionLost(me.closed) } }
        }
        return false
    }

    /// Routes one frame to its waiter; returns the error that ends the connection when descriptors and frames no
    /// longer pair (PROTOCOL.md §5: a frame that names a descriptor none came for, or one that cannot be read
    /// while descriptors wait, which might have claimed one).
    private func dispatch(_ frame: Frame, descriptors: inout DescriptorQueue) -> FerryError? {
        guard let reply = ReplyEnvelope.parse(frame.json, maxDepth: 64) else {
            return descriptors.isEmpty ? nil : FerryError(.protocolError, "ferryd sent a reply this client cannot read while descriptors were due")
        }
        switch reply {
        case .result(let id, let result):
            if let named = result["body_fd"]?.objectValue {
                guard let fd = descriptors.pop() else {
                    return FerryError(.protocolError, "ferryd named a body descriptor that did not arrive")
                }
                let file = BodyFile(fd: fd, offset: Int(named["offset"]?.intValue ?? -1), length: Int(named["length"]?.intValue ?? -1))
                guard file.offset >= 0, file.length >= 0 else {
                    finish(id, with: .failure(FerryError(.protocolError, "ferryd named a body descriptor without its offset and length")), fromReader: true)
                    return nil
                }
                finish(id, with: .success(FerryReply(result: result, body: [], file: file)), fromReader: true)
                return nil
            }
            finish(id, with: .success(FerryReply(result: result, body: frame.body)), fromReader: true)
        case .error(let id, let e):
            if id == 0 {
                // Names no request. A protocol error or a refusal ends the connection (EOF follows); any other
                // id-0 error answers an envelope this client never sends (its requests are checked before sending).
                if [.protocolError, .permissionDenied, .resourceExhausted].contains(e.code) { connectionLost(e) }
            } else {
                finish(id, with: .failure(e), fromReader: true)
            }
        case .event(let id, let name, let data):
            deliverEvent(id: id, name: name, data: data, body: frame.body)
        }
        return nil
    }

    private func deliverEvent(id: UInt64, name: String, data: JSONObject, body: [UInt8]) {
        let stream = state.withLock { s -> (AsyncThrowingStream<FerryStreamItem, any Error>.Continuation, StreamAccount)? in
            switch s.waiters[id] {
            case .call(let c, var chunks)?:
                // A plain call joins chunk events into the final body and drops other events.
                if name == EventName.chunk.rawValue {
                    s.waiters[id] = nil
                    chunks.append(contentsOf: body)
                    s.waiters[id] = .call(c, chunks: chunks)
                }
                return nil
            case .stream(let c, let account)?: return (c, account)
            case nil: return nil
            }
        }
        guard let (continuation, account) = stream else { return }
        account.delivered(body.count)
        if case .terminated = continuation.yield(.event(name: name, data: data, body: body)) { account.consumed(body.count) }
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
}
