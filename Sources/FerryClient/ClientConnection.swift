#if canImport(Glibc)
import Glibc
#endif
import CFerryIO
import FerryProtocol
import Synchronization

/// One socket shared by many concurrent calls: writes under a lock, one reader thread that routes every reply to
/// its waiter by id. Waiters are resumed outside the lock.
final class ClientConnection: Sendable {
    enum Waiter {
        case call(CheckedContinuation<FerryReply, any Error>, chunks: [UInt8])
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
    private let writeLock = Mutex(())
    /// Body bytes streams may hold unconsumed before the reader stops reading the socket.
    let credit = ReadCredit(limit: 8 * 1024 * 1024)

    init(path: String) throws(FerryError) {
        self.path = path
        fd = try SocketIO.connect(path: path)
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
        let json = envelope.json
        let limits = state.withLock { ($0.maxFrameBytes, $0.maxJSONBytes, $0.maxNesting) }
        if json.depth > limits.2 {
            return finish(envelope.id, with: .failure(FerryError(.invalidArgument, "arguments nested deeper than the server's limit of \(limits.2)")))
        }
        let jsonBytes = JSONWriter.encode(json)
        if jsonBytes.count > limits.1 {
            return finish(envelope.id, with: .failure(FerryError(.resourceExhausted, "request envelope of \(jsonBytes.count) bytes exceeds the server's limit of \(limits.1)")))
        }
        guard let frames = ClientConnection.frames(envelope, json: jsonBytes, body: body, maxFrameBytes: limits.0) else {
            return finish(envelope.id, with: .failure(FerryError(.resourceExhausted, "the request envelope leaves no room for its body in a frame of \(limits.0) bytes")))
        }
        let ok = writeLock.withLock { _ -> Bool in
            // A call cancelled between registering and sending is not sent at all (cancel requests have no waiter).
            if envelope.op != "cancel" && !state.withLock({ $0.waiters[envelope.id] != nil }) { return true }
            // All parts of one request go out together, so another call's frames never split an upload.
            for frame in frames where !frame.withUnsafeBytes({ SocketIO.writeAll(fd, $0) }) { return false }
            return true
        }
        if !ok { connectionLost(FerryError.connection("the connection to ferryd at \(path) is closed")) }
    }

    /// The frames of one request: one when it fits, else the envelope with `"more": true` and the body's first part,
    /// then continuation frames `{"id", "more"}` with the next parts (PROTOCOL.md section 5). `json` is the
    /// envelope already encoded (the caller measured it), so the common single-frame case encodes it only once.
    static func frames(_ envelope: RequestEnvelope, json: [UInt8], body: [UInt8], maxFrameBytes: Int) -> [[UInt8]]? {
        if ProtocolLimits.headerBytes + json.count + body.count <= maxFrameBytes { return [frame(json, body[...])] }
        var first = envelope
        first.more = true
        let firstJSON = JSONWriter.encode(first.json)
        // Room left for body bytes once the header and an envelope (with some slack for digits) are in.
        let room = maxFrameBytes - ProtocolLimits.headerBytes - firstJSON.count - 64
        guard room >= 1024 else { return nil }
        var frames = [frame(firstJSON, body[..<room])]
        var offset = room
        while offset < body.count {
            let end = min(body.count, offset + room)
            let part = ContinuationEnvelope(id: envelope.id, more: end < body.count)
            frames.append(frame(JSONWriter.encode(part.json), body[offset..<end]))
            offset = end
        }
        return frames
    }

    /// One frame from encoded JSON and a slice of the body, without copying the slice first.
    private static func frame(_ json: [UInt8], _ body: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(ProtocolLimits.headerBytes + json.count + body.count)
        body.withUnsafeBytes { b in FrameEncoder.append(to: &out, body: b) { $0.append(contentsOf: json) } }
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

    /// Ends the waiter of `id` (if still there) with a reply or an error.
    func finish(_ id: UInt64, with outcome: Result<FerryReply, FerryError>) {
        guard let waiter = state.withLock({ $0.waiters.removeValue(forKey: id) }) else { return }
        switch (waiter, outcome) {
        case (.call(let c, _), .success(let reply)): c.resume(returning: reply)
        case (.call(let c, _), .failure(let e)): c.resume(throwing: e)
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
            case .call(let c, _): c.resume(throwing: error)
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

    /// Routes one frame to its waiter; returns the error that ends the connection when descriptors and frames no
    /// longer pair (PROTOCOL.md §5: a frame that names a descriptor none came for, or one that cannot be read
    /// while descriptors wait, which might have claimed one).
    private func dispatch(_ frame: Frame, descriptors: inout DescriptorQueue) -> FerryError? {
        guard let value = try? JSONParser.parse(frame.json, maxDepth: 64), let reply = ReplyEnvelope.parse(value) else {
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
                    finish(id, with: .failure(FerryError(.protocolError, "ferryd named a body descriptor without its offset and length")))
                    return nil
                }
                finish(id, with: .success(FerryReply(result: result, body: [], file: file)))
                return nil
            }
            let chunks = takeChunks(id)
            finish(id, with: .success(FerryReply(result: result, body: chunks + frame.body)))
        case .error(let id, let e):
            if id == 0 {
                // Names no request. A protocol error or a refusal ends the connection (EOF follows); any other
                // id-0 error answers an envelope this client never sends (its requests are checked before sending).
                if [.protocolError, .permissionDenied, .resourceExhausted].contains(e.code) { connectionLost(e) }
            } else {
                finish(id, with: .failure(e))
            }
        case .event(let id, let name, let data):
            deliverEvent(id: id, name: name, data: data, body: frame.body)
        }
        return nil
    }

    private func takeChunks(_ id: UInt64) -> [UInt8] {
        state.withLock { s -> [UInt8] in
            guard case .call(let c, let chunks)? = s.waiters[id], !chunks.isEmpty else { return [] }
            s.waiters[id] = .call(c, chunks: [])
            return chunks
        }
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
