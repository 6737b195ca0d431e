import FerryCache
import FerryLoop
import FerryProtocol

/// One client connection: reads frames, admits requests through `RequestGate`, and buffers replies until the loop's
/// iteration hook flushes them. Loop thread only.
///
/// Lifetime: its pipe holds it (as delegate) from accept until libuv's close callback, so callbacks never see a freed
/// connection; everything else holds it weakly or by id.
final class Connection: LoopPipeDelegate {
    /// The body size of the last hot reply written (for its access line).
    var lastHotBodyBytes = 0
    /// What this connection did, added to its uid's totals when it closes (`stats`' `uids`).
    var usage = UIDUsage()
    /// Where a connection is on its way out: one state, so reading, admitting and writing ask one question.
    enum Life: Equatable {
        case open
        /// The client ended its sending side: nothing more is read; the requests in flight run to their end, and
        /// the connection then closes once their replies are written.
        case finishing
        /// After a protocol error, a refusal, the client's end of stream or the daemon's stop: nothing more is
        /// read or admitted; the connection closes once its replies are written.
        case closingAfterFlush
        /// The pipe is closed (or closing): nothing is written any more.
        case closed
    }

    let id: UInt64
    /// Strong, and a `let`: a call on anything reached through it then borrows (through `unowned(unsafe)`, each
    /// object loaded from the table was retained and released around every call made on it, callgrind). Held
    /// once per connection; the table lives as long as the daemon anyway.
    let table: ConnectionTable
    let pipe: LoopPipe
    let decoder: FrameDecoder
    /// The decoder's buffer, held here too: what a read fills is reached in one step (through the decoder, a call
    /// on it retained and released it, callgrind).
    private let inbox: ByteBuffer
    var life = Life.open
    private var handshaken = false
    /// What `RequestGate` sees.
    var phase: ConnectionPhase { life != .open ? .closing : (handshaken ? .ready : .awaitingHello) }
    var isClosed: Bool { life == .closed }
    private(set) var inFlight: [UInt64: RequestContext] = [:]
    /// Sets of the fast path waiting for their journal write (`Connection+PendingSets`), and their counters.
    var pendingSets: [(id: UInt64, counters: OperationCounters)] = []
    /// Requests of `inFlight` and `pendingSets` together, kept as a number: every request's admission asks it, and
    /// asking the two collections retained and released their storage each time. Changed only where they change.
    var requestsInFlight = 0
    /// Whether any request of this connection is still running.
    var hasRequestsInFlight: Bool { requestsInFlight > 0 }
    /// Replies not yet handed to the kernel or to libuv.
    var out: [UInt8] = []
    /// Bytes queued on the pipe (`write(copying:)`) whose write has not completed.
    var queuedWriteBytes = 0
    /// Bodies this large, with nothing waiting before them, are written from where they are (`writeFrameDirectly`).
    static let directWriteBytes = 64 * 1024
    /// Descriptors waiting in `out` for their frames (`Connection+Descriptors`), in order, and the timer that tries
    /// again when the socket was full as one was due.
    var outDescriptors: [OutgoingDescriptor] = []
    var descriptorRetry: LoopTimer?
    var descriptorRetryMs: UInt64 = 1
    /// Replies whose bodies are written as the socket drains (`pump`), oldest first, and what is left of them.
    var streams: [StreamedReply] = []
    var streamedBytes = 0
    /// The part of `streamedBytes` held in memory (not a file read later), capped by `maxUnreadReplyBytes`.
    var unreadMemoryBytes = 0
    var isPumping = false
    /// When output was last written (`isStalled`), on the loop's clock (`iterationMs`).
    lazy var lastDrainMs = iterationMs
    /// The loop's time as of this iteration (`uv_now`, monotonic ms): what stall detection, in seconds, needs, and
    /// no clock read per reply (two `clock_gettime`s a request were 1.6 % of ferryd at 50 × 1 pings).
    var iterationMs: Int64 { Int64(table.loop.nowMs) }
    static let stalledAfterMs: Int64 = 2000
    /// Fetched bodies a stalled connection may have waiting unread (each holds a transfer's spool file).
    static let maxUnreadSpools = 8
    /// Body bytes per `chunk` event of a streamed reply.
    static let streamPieceBytes = 256 * 1024
    /// The socket's send buffer asked for once a reply of `largeStreamBytes` or more streams on it (`pump`). Why:
    /// with the default (208 KiB here) the kernel took part of each 256 KiB piece, the rest was copied into the
    /// output to wait, and a 10 MB hit cost ferryd two copies of every byte (perf: `memmove` 23 % of its time
    /// beside the kernel's own copy at 24 %). The kernel memory it allows is spent only while the client is slower
    /// than the daemon, and then at most this much per connection (Linux doubles the value asked, up to
    /// `net.core.wmem_max`).
    static let largeStreamSendBuffer = 1024 * 1024
    static let largeStreamBytes = 1024 * 1024
    var sendBufferRaised = false
    /// Request bodies held by requests in flight: memory a client makes the daemon keep, so it counts toward
    /// backpressure like unsent output does.
    private var heldBodyBytes = 0
    /// Request bodies still arriving in continuation frames.
    private(set) var uploads = UploadTable()
    private var countedUploadBytes = 0
    var backpressure: Backpressure
    var isReading = false
    /// Re-entrancy guard: a reply flushed inside `processFrames` can resume reading, which must not recurse.
    private var isProcessing = false
    /// Entered in the table's list of connections to flush this iteration.
    var needsFlush = false
    /// Entered in the table's batch of connections to answer at the end of the poll phase (`ReadBatch`), and the
    /// scan of its next frame, made as it was read.
    var inBatch = false
    var prescan = Prescan()
    /// The scan of the frame after the one being handled (`lookAhead`).
    var prescanLater = Prescan()
    var clientName = ""

    /// Read space handed to libuv per read: small enough that idle connections stay cheap.
    private static let readChunk = 16 * 1024

    init(id: UInt64, table: ConnectionTable, pipe: LoopPipe) {
        self.id = id
        self.table = table
        self.pipe = pipe
        let limits = table.config.limits
        inbox = ByteBuffer(capacity: Connection.readChunk)
        decoder = FrameDecoder(maxFrameBytes: limits.handshakeFrameBytes, maxJSONBytes: min(limits.maxJSONBytes, limits.handshakeFrameBytes),
                               buffer: inbox)
        backpressure = Backpressure(high: table.config.highWaterBytes, low: table.config.lowWaterBytes)
        pipe.delegate = self
    }

    var pendingOutputBytes: Int { out.count + queuedWriteBytes }
    /// What backpressure weighs: everything this connection makes the daemon hold.
    /// Unfinished uploads are not counted: pausing would stop the very parts that finish them. They are bounded by
    /// `maxUploadsPerConnection` and the server-wide upload budget instead.
    /// Streamed replies count whole, so a client that asks for large values and does not read is not read further.
    var heldBytes: Int { pendingOutputBytes + heldBodyBytes + streamedBytes }
    static let maxUploadsPerConnection = 4
    /// The peer's uid, read once (`SO_PEERCRED`); 0 when it cannot be read (such a peer is refused anyway).
    lazy var peerUID: UInt32 = pipe.peerUID() ?? 0

    // MARK: Reading

    func startReading() {
        guard !isReading, life == .open else { return }
        isReading = true
        pipe.startReading()
    }

    func stopReading() {
        guard isReading else { return }
        isReading = false
        pipe.stopReading()
    }

    func pipeReadSpace() -> UnsafeMutableRawBufferPointer {
        inbox.writableSpace(minimum: Connection.readChunk)
    }

    func pipeDidRead(_ nread: Int) {
        if nread > 0 {
            inbox.didWrite(nread)
            table.stats.bytesIn += UInt64(nread)
            usage.bytesIn += UInt64(nread)
            // A few small requests wait for the rest of the poll phase's (`ReadBatch`); more is handled now.
            if inbox.readableCount <= Connection.batchedReadBytes && !isProcessing { return joinBatch() }
            processFrames()
        } else if nread < 0 {
            // What was read before the end is handled before it, as when every read was handled at once.
            if inBatch { processFrames() }
            if nread == LoopPipe.endOfFile {
                if decoder.hasPartialFrame {
                    table.log.info("conn=\(id) closed mid-frame (\(decoder.pendingBytes) bytes of a truncated frame dropped)")
                }
                // Gone altogether: nobody reads a reply, so the work in flight stops. Only done sending (a shutdown
                // of its side): every reply owed to its complete requests is finished and written, then it closes.
                return pipe.peerHasClosed() ? close() : finishThenClose()
            }
            table.log.debug("conn=\(id) read error: \(loopErrorText(Int32(nread)))")
            close()
        }
    }

    /// Handles buffered frames until none is whole, the connection is paused by backpressure, or it is closing.
    func processFrames() {
        guard !isProcessing else { return }
        isProcessing = true
        defer { isProcessing = false }
        while life == .open && !backpressure.isPaused {
            do {
                guard try decoder.nextFrame({ handleFrame($0) }) else { break }
            } catch {
                table.stats.countConnectionError(.protocolError)
                protocolError(WireError(.protocolError, "\(error)"), id: 0)
                return
            }
        }
        if inbox.readableCount == 0 { inbox.reset(shrinkTo: Connection.readChunk) }
    }

    private func handleFrame(_ frame: FrameView) {
        // Continuation frames exist only while an upload is open, so the common path never looks for them.
        if !uploads.isEmpty, let part = ContinuationEnvelope.parse(frame.json, maxNesting: table.config.limits.maxNesting) {
            return handleContinuation(part, body: Array(frame.body))
        }
        let (hot, digest, slotAsked) = hotScan(of: frame)
        lookAhead(past: ProtocolLimits.headerBytes + frame.json.count + frame.body.count)
        if slotAsked, let digest { prefetchValue(digest: digest) }
        if let hot, answerHot(hot, frame, digest: digest) { return }
        let envelope: RequestEnvelope
        do throws(RequestEnvelope.Invalid) {
            // A plain envelope the fast path did not answer (a set, a miss) is not read twice.
            if let hot { envelope = hot.requestEnvelope(frame.json) } else {
                envelope = try RequestEnvelope.parse(frame.json, maxNesting: table.config.limits.maxNesting)
            }
        } catch {
            table.stats.requestsTotal += 1
            usage.requests += 1
            table.stats.countError(error.error.code, op: nil)
            writeError(id: error.id, error: error.error)
            return
        }
        table.stats.requestsTotal += 1
        usage.requests += 1
        uploads.newRequest(envelope.id)
        // No operation name is long: a huge one is unknown without hashing it (a String's hash normalises it first).
        let entry = envelope.op.utf8.count <= Router.maxNameBytes ? table.router.entry(envelope.op) : nil
        let situation = gateSituation(id: envelope.id, operationKnown: entry != nil)
        entry?.counters.requests += 1
        switch RequestGate.decide(op: envelope.op, situation) {
        case .closeConnection(let error):
            table.stats.countError(error.code, op: entry?.counters)
            protocolError(error, id: envelope.id)
        case .reject(let error):
            table.stats.countError(error.code, op: entry?.counters)
            writeError(id: envelope.id, error: error)
            if envelope.more { uploads.discard(envelope.id) }
        case .admit where envelope.more:
            guard let limit = streamedBodyLimit(entry!.handler.descriptor) else {
                uploads.discard(envelope.id)
                let error = WireError(.invalidArgument, "\(envelope.op) does not take a body in several frames")
                table.stats.countError(error.code, op: entry?.counters)
                return writeError(id: envelope.id, error: error)
            }
            if let refusal = uploadRefusal(adding: frame.body.count, newUpload: true) {
                uploads.discard(envelope.id)
                table.stats.countError(refusal.code, op: entry?.counters)
                return writeError(id: envelope.id, error: refusal)
            }
            uploadStep(envelope.id, uploads.begin(envelope, firstPart: Array(frame.body), limit: limit))
        case .admit:
            guard frame.body.isEmpty || entry!.takesBody else {
                let error = WireError(.invalidArgument, "\(envelope.op) takes no body (this request's frame has \(frame.body.count) bytes of one)")
                table.stats.countError(error.code, op: entry?.counters)
                return writeError(id: envelope.id, error: error)
            }
            startRequest(envelope, body: Array(frame.body), entry: entry!)
        }
    }

    /// What `RequestGate` decides a request with this id by, on this connection now (both paths ask it).
    func gateSituation(id: UInt64, operationKnown: Bool) -> RequestGate.Situation {
        RequestGate.Situation(
            phase: phase, serverDraining: table.isDraining,
            // Empty tables are asked nothing: the common case of the fast path.
            idInFlight: (requestsInFlight > 0 && (inFlight[id] != nil || isPendingSet(id))) || uploads.contains(id),
            connectionInFlight: requestsInFlight, totalInFlight: table.totalInFlight,
            maxConnectionInFlight: table.maxConnectionInFlight, maxTotalInFlight: table.maxTotalInFlight,
            operationKnown: operationKnown)
    }

    /// The largest body an operation takes in several frames; nil when it takes none.
    private func streamedBodyLimit(_ op: OperationDescriptor) -> Int? {
        op.body.takesBody ? table.config.limits.maxValueBytes : nil
    }

    private func handleContinuation(_ part: ContinuationEnvelope, body: [UInt8]) {
        if uploads.contains(part.id), let refusal = uploadRefusal(adding: body.count, newUpload: false) {
            _ = uploads.cancel(part.id)
            syncUploadBytes()
            table.stats.countError(refusal.code, op: nil)
            if !part.more { _ = uploads.next(part, body: []) }  // the last part: stop discarding
            return writeError(id: part.id, error: refusal)
        }
        uploadStep(part.id, uploads.next(part, body: body))
    }

    /// Why an upload may not grow: too many on this connection, or the server's upload budget is spent.
    private func uploadRefusal(adding bytes: Int, newUpload: Bool) -> WireError? {
        if newUpload && uploads.count >= Connection.maxUploadsPerConnection {
            return WireError(.resourceExhausted, "at most \(Connection.maxUploadsPerConnection) bodies may be arriving at once on one connection")
        }
        if !table.budget.fits(bytes) {
            return WireError(.resourceExhausted, """
                ferryd holds \(table.budget.used) bytes in transit already (its buffer limit is \(table.budget.limit)); try again
                """, details: ["limit": .int(Int64(table.budget.limit))])
        }
        return nil
    }

    private func uploadStep(_ id: UInt64, _ step: UploadTable.Step) {
        syncUploadBytes()
        switch step {
        case .pending, .dropped:
            applyBackpressure()
        case .failed(let error):
            table.stats.countError(error.code, op: nil)
            writeError(id: id, error: error)
        case .complete(let envelope, let body):
            guard let entry = table.router.entry(envelope.op) else { return }
            startRequest(envelope, body: body, entry: entry)
        }
    }

    /// `cancel` of a request whose body is still arriving.
    func cancelUpload(_ id: UInt64) -> Bool {
        guard uploads.cancel(id) else { return false }
        syncUploadBytes()
        table.stats.countError(.cancelled, op: nil)
        writeError(id: id, error: WireError(.cancelled, "cancelled by the client"))
        return true
    }

    /// Keeps the server-wide count of upload bytes in step with this connection's table.
    private func syncUploadBytes() {
        table.uploadBytes += uploads.heldBytes - countedUploadBytes
        countedUploadBytes = uploads.heldBytes
    }

    private func startRequest(_ envelope: RequestEnvelope, body: [UInt8], entry: Router.Entry) {
        let request = RequestContext(envelope: envelope, body: body, serial: table.nextSerial(),
                                     counters: entry.counters, connection: self)
        entry.handler.start(request)
        // Most requests end inside `start`; only those still running are tracked (for cancel, deadlines,
        // duplicate ids, limits and the shutdown drain).
        if !request.isFinished {
            request.isRegistered = true
            inFlight[envelope.id] = request
            requestsInFlight += 1
            heldBodyBytes += request.body.count
            table.requestStarted(request, on: id, timeoutMs: envelope.timeoutMs)
        }
    }

    /// `hello` succeeded: lift the handshake frame limit.
    func didHandshake(clientName: String) {
        handshaken = true
        self.clientName = clientName
        decoder.maxFrameBytes = table.config.limits.maxFrameBytes
        decoder.maxJSONBytes = table.config.limits.maxJSONBytes
    }

    func requestEnded(_ request: RequestContext) {
        guard request.isRegistered else { return }
        request.isRegistered = false
        if inFlight[request.id] === request {
            inFlight[request.id] = nil
            requestsInFlight -= 1
            heldBodyBytes -= request.body.count
            table.requestEnded()
            if life == .finishing && !hasRequestsInFlight { return closeAfterFlush() }
            if !isClosed { applyBackpressure() }
        }
    }

    func request(id: UInt64) -> RequestContext? { inFlight[id] }

    /// Answers every request in flight with `error` (the daemon is stopping), stopping its work.
    func cancelEveryRequest(with error: WireError) {
        for request in Array(inFlight.values) { request.cancel(with: error) }
    }

    // MARK: Closing

    /// End of the client's stream: stop reading, let the requests in flight finish, then close after the flush.
    private func finishThenClose() {
        guard life == .open else { return }
        stopReading()
        if !hasRequestsInFlight { return closeAfterFlush() }
        life = .finishing
    }

    /// Closes now: requests in flight are cancelled, unsent replies dropped.
    func close() {
        guard life != .closed else { return }
        life = .closed
        isReading = false
        leaveBatch()
        table.outputBytes -= out.count  // queued writes are subtracted as libuv cancels them
        out = []
        dropDescriptors()
        let dropped = streams
        streams = []
        for reply in dropped {
            reply.isOver = true
            reply.onDrop?()
        }
        streamedBytes = 0
        unreadMemoryBytes = 0
        table.uploadBytes -= countedUploadBytes
        countedUploadBytes = 0
        for request in Array(inFlight.values) { request.abandon() }
        table.closed(self)
        pipe.close()
    }
}
