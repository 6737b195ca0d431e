import FerryLoop
import FerryProtocol

/// One client connection: reads frames, admits requests through `RequestGate`, and buffers replies until the loop's
/// iteration hook flushes them. Loop thread only.
///
/// Lifetime: its pipe holds it (as delegate) from accept until libuv's close callback, so callbacks never see a freed
/// connection; everything else holds it weakly or by id.
final class Connection: LoopPipeDelegate {
    let id: UInt64
    /// The server outlives every connection (it runs until the process exits), so no reference counting is needed.
    unowned(unsafe) let server: Server
    let pipe: LoopPipe
    private var decoder: FrameDecoder
    var phase: ConnectionPhase = .awaitingHello
    private(set) var inFlight: [UInt64: RequestContext] = [:]
    /// Replies not yet handed to the kernel or to libuv.
    var out: [UInt8] = []
    /// Bytes queued on the pipe (`write(copying:)`) whose write has not completed.
    var queuedWriteBytes = 0
    /// Request bodies held by requests in flight: memory a client makes the daemon keep, so it counts toward
    /// backpressure like unsent output does.
    private var heldBodyBytes = 0
    /// Request bodies still arriving in continuation frames.
    private var uploads = UploadTable()
    private var countedUploadBytes = 0
    var backpressure: Backpressure
    var isReading = false
    private var isProcessing = false
    var needsFlush = false
    var closeWhenFlushed = false
    private(set) var isClosed = false
    var clientName = ""

    /// Read space handed to libuv per read: small enough that idle connections stay cheap.
    private static let readChunk = 16 * 1024

    init(id: UInt64, server: Server, pipe: LoopPipe) {
        self.id = id
        self.server = server
        self.pipe = pipe
        let limits = server.config.limits
        decoder = FrameDecoder(maxFrameBytes: limits.handshakeFrameBytes, maxJSONBytes: min(limits.maxJSONBytes, limits.handshakeFrameBytes),
                               buffer: ByteBuffer(capacity: Connection.readChunk))
        backpressure = Backpressure(high: server.config.highWaterBytes, low: server.config.lowWaterBytes)
        pipe.delegate = self
    }

    var pendingOutputBytes: Int { out.count + queuedWriteBytes }
    /// What backpressure weighs: everything this connection makes the daemon hold.
    /// Unfinished uploads are not counted: pausing would stop the very parts that finish them. They are bounded by
    /// `maxUploadsPerConnection` and the server-wide upload budget instead.
    var heldBytes: Int { pendingOutputBytes + heldBodyBytes }
    static let maxUploadsPerConnection = 4

    // MARK: Reading

    func startReading() {
        guard !isReading, !isClosed, phase != .closing else { return }
        isReading = true
        pipe.startReading()
    }

    func stopReading() {
        guard isReading else { return }
        isReading = false
        pipe.stopReading()
    }

    func pipeReadSpace() -> UnsafeMutableRawBufferPointer {
        decoder.buffer.writableSpace(minimum: Connection.readChunk)
    }

    func pipeDidRead(_ nread: Int) {
        if nread > 0 {
            decoder.buffer.didWrite(nread)
            server.stats.bytesIn += UInt64(nread)
            processFrames()
        } else if nread < 0 {
            if nread == LoopPipe.endOfFile && !decoder.hasPartialFrame {
                // A clean end: requests still running are cancelled (the client is gone or done sending), but
                // replies already produced are delivered to a client that only shut down its sending side.
                closeAfterFlush()
                return
            }
            if nread == LoopPipe.endOfFile {
                server.log.info("conn=\(id) closed mid-frame (\(decoder.pendingBytes) bytes of a truncated frame dropped)")
            } else {
                server.log.debug("conn=\(id) read error: \(loopErrorText(Int32(nread)))")
            }
            close()
        }
    }

    /// Handles buffered frames until none is whole, the connection is paused by backpressure, or it is closing.
    func processFrames() {
        guard !isProcessing else { return }
        isProcessing = true
        defer { isProcessing = false }
        while !isClosed && phase != .closing && !backpressure.isPaused {
            do {
                guard try decoder.nextView({ handleFrame($0) }) != nil else { break }
            } catch {
                server.stats.countConnectionError(.protocolError)
                protocolError(WireError(.protocolError, "\(error)"), id: 0)
                return
            }
        }
        if decoder.pendingBytes == 0 { decoder.buffer.reset(shrinkTo: Connection.readChunk) }
    }

    private func handleFrame(_ frame: FrameView) {
        // Continuation frames exist only while an upload is open, so the common path never looks for them.
        if !uploads.isEmpty, let part = ContinuationEnvelope.parse(frame.json, maxNesting: server.config.limits.maxNesting) {
            return handleContinuation(part, body: Array(frame.body))
        }
        let envelope: RequestEnvelope
        do {
            envelope = try RequestEnvelope.parse(frame.json, maxNesting: server.config.limits.maxNesting)
        } catch {
            server.stats.requestsTotal += 1
            server.stats.countError(error.error.code, op: nil)
            writeError(id: error.id, error: error.error)
            return
        }
        server.stats.requestsTotal += 1
        uploads.newRequest(envelope.id)
        let entry = server.router.entry(envelope.op)
        let situation = RequestGate.Situation(
            phase: phase, serverDraining: server.isDraining, idInFlight: inFlight[envelope.id] != nil || uploads.contains(envelope.id),
            connectionInFlight: inFlight.count, totalInFlight: server.totalInFlight,
            maxConnectionInFlight: server.config.limits.maxInFlight, maxTotalInFlight: server.config.maxTotalInFlight,
            operationKnown: entry != nil)
        entry?.counters.requests += 1
        switch RequestGate.decide(op: envelope.op, situation) {
        case .closeConnection(let error):
            server.stats.countError(error.code, op: entry?.counters)
            protocolError(error, id: envelope.id)
        case .reject(let error):
            server.stats.countError(error.code, op: entry?.counters)
            writeError(id: envelope.id, error: error)
            if envelope.more { uploads.discard(envelope.id) }
        case .admit where envelope.more:
            guard let limit = streamedBodyLimit(entry!.handler.descriptor) else {
                uploads.discard(envelope.id)
                let error = WireError(.invalidArgument, "\(envelope.op) does not take a body in several frames")
                server.stats.countError(error.code, op: entry?.counters)
                return writeError(id: envelope.id, error: error)
            }
            if let refusal = uploadRefusal(adding: frame.body.count, newUpload: true) {
                uploads.discard(envelope.id)
                server.stats.countError(refusal.code, op: entry?.counters)
                return writeError(id: envelope.id, error: refusal)
            }
            uploadStep(envelope.id, uploads.begin(envelope, firstPart: Array(frame.body), limit: limit))
        case .admit:
            startRequest(envelope, body: Array(frame.body), entry: entry!)
        }
    }

    /// The largest body an operation takes in several frames; nil when it takes none.
    private func streamedBodyLimit(_ op: OperationDescriptor) -> Int? {
        op.body.takesBody ? server.config.limits.maxValueBytes : nil
    }

    private func handleContinuation(_ part: ContinuationEnvelope, body: [UInt8]) {
        if uploads.contains(part.id), let refusal = uploadRefusal(adding: body.count, newUpload: false) {
            _ = uploads.cancel(part.id)
            syncUploadBytes()
            server.stats.countError(refusal.code, op: nil)
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
        if server.uploadBytes + bytes > server.config.maxUploadBytes {
            return WireError(.resourceExhausted, "ferryd is receiving \(server.config.maxUploadBytes) bytes of request bodies already; try again")
        }
        return nil
    }

    private func uploadStep(_ id: UInt64, _ step: UploadTable.Step) {
        syncUploadBytes()
        switch step {
        case .pending, .dropped:
            applyBackpressure()
        case .failed(let error):
            server.stats.countError(error.code, op: nil)
            writeError(id: id, error: error)
        case .complete(let envelope, let body):
            guard let entry = server.router.entry(envelope.op) else { return }
            startRequest(envelope, body: body, entry: entry)
        }
    }

    /// `cancel` of a request whose body is still arriving.
    func cancelUpload(_ id: UInt64) -> Bool {
        guard uploads.cancel(id) else { return false }
        syncUploadBytes()
        server.stats.countError(.cancelled, op: nil)
        writeError(id: id, error: WireError(.cancelled, "cancelled by the client"))
        return true
    }

    /// Keeps the server-wide count of upload bytes in step with this connection's table.
    private func syncUploadBytes() {
        server.uploadBytes += uploads.heldBytes - countedUploadBytes
        countedUploadBytes = uploads.heldBytes
    }

    private func startRequest(_ envelope: RequestEnvelope, body: [UInt8], entry: Router.Entry) {
        let request = RequestContext(envelope: envelope, body: body, serial: server.nextSerial(),
                                     counters: entry.counters, connection: self)
        entry.handler.start(request)
        // Most requests end inside `start`; only those still running are tracked (for cancel, deadlines,
        // duplicate ids, limits and the shutdown drain).
        if !request.isFinished {
            request.isRegistered = true
            inFlight[envelope.id] = request
            heldBodyBytes += request.body.count
            server.totalInFlight += 1
            if let ms = envelope.timeoutMs {
                server.scheduleDeadline(connection: id, request: request, afterMs: UInt64(ms))
            }
        }
    }

    /// `hello` succeeded: lift the handshake frame limit.
    func didHandshake(clientName: String) {
        phase = .ready
        self.clientName = clientName
        decoder.maxFrameBytes = server.config.limits.maxFrameBytes
        decoder.maxJSONBytes = server.config.limits.maxJSONBytes
    }

    func requestEnded(_ request: RequestContext) {
        guard request.isRegistered else { return }
        request.isRegistered = false
        if inFlight[request.id] === request {
            inFlight[request.id] = nil
            heldBodyBytes -= request.body.count
            server.totalInFlight -= 1
            server.requestEnded()
            if !isClosed { applyBackpressure() }
        }
    }

    func request(id: UInt64) -> RequestContext? { inFlight[id] }

    // MARK: Closing

    /// Closes now: requests in flight are cancelled, unsent replies dropped.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        phase = .closing
        isReading = false
        server.uploadBytes -= countedUploadBytes
        countedUploadBytes = 0
        for request in Array(inFlight.values) { request.abandon() }
        server.connectionClosed(self)
        pipe.close()
    }
}
