#if canImport(Glibc)
import Glibc
#endif
import FerryProtocol

/// One request in flight: what the operation needs to do its work and the only way it answers.
///
/// Every request ends exactly once, through `succeed`, `fail` or `cancel`; later calls are ignored, so a timer that
/// fires after a cancel cannot send a second final frame. An operation that keeps working after `start` returns sets
/// `onCancel` to stop that work (deadline, `cancel`, closed connection, shutdown). Loop thread only.
///
/// ```swift
/// func start(_ request: RequestContext) {
///     request.event(.tick, data: ["n": 0])
///     request.succeed(["pong": true], body: request.body)
/// }
/// ```
public final class RequestContext {
    public let id: UInt64
    /// The connection it came on (its id): whose share of shared slots the request uses.
    public let clientID: UInt64
    /// The uid of the process at the other end of the connection (`SO_PEERCRED`).
    public var clientUID: UInt32 { connection?.peerUID ?? 0 }
    public let op: String
    public let args: JSONObject
    public let body: [UInt8]
    /// Tells a deadline entry for this request from one for a later request that reuses its id.
    let serial: UInt64
    let counters: OperationCounters
    /// When it was read (the monotonic clock), for its operation's latency histogram.
    private let startedNs = LatencyHistogram.now()
    /// Strong on purpose: the only cycle (connection → inFlight → request → connection) is broken when the request
    /// ends, which every path guarantees, and a weak reference costs a side-table hop on every request.
    private(set) var connection: Connection?
    /// Whether the connection tracks this request in its in-flight table (only requests still running after
    /// `start` returns are entered there).
    var isRegistered = false
    public private(set) var isFinished = false
    /// Stops the operation's work; called once, before the final error frame is written.
    public var onCancel: (() -> Void)?

    init(envelope: RequestEnvelope, body: [UInt8], serial: UInt64, counters: OperationCounters, connection: Connection) {
        id = envelope.id
        clientID = connection.id
        op = envelope.op
        args = envelope.args
        self.body = body
        self.serial = serial
        self.counters = counters
        self.connection = connection
    }

    /// The largest body piece of one frame on this connection (a body over it is sent in `chunk` events).
    var pieceBytes: Int { connection?.pieceBytes ?? Connection.streamPieceBytes }

    /// Sends an event frame (`final: false`). Ignored after the request ended, except while a body it answered
    /// with still streams (a download's progress goes on).
    public func event(_ name: EventName, data: JSONObject = JSONObject(), body: [UInt8] = []) {
        if !isFinished, let connection { return connection.writeEvent(id: id, name: name, data: data, body: body) }
        guard let stream, !stream.isOver, let connection = streamConnection else { return }
        connection.writeEvent(id: id, name: name, data: data, body: body)
    }

    /// The reply still streaming its body after `succeed(streaming:)`, and its connection (weak: the connection's
    /// `streams` own it).
    private weak var stream: StreamedReply?
    private weak var streamConnection: Connection?

    /// Ends the request with a result; a body too large for one frame is sent as `chunk` events first.
    public func succeed(_ result: JSONObject, body: [UInt8] = []) {
        guard let connection = end(result, bytes: body.count) else { return }
        connection.writeResult(id: id, result: result, body: body)
    }

    /// The same, with the body as a slice of a larger buffer (sent without copying it first).
    public func succeed(_ result: JSONObject, body: ArraySlice<UInt8>) {
        guard let connection = end(result, bytes: body.count) else { return }
        connection.writeResult(id: id, result: result, body: body)
    }

    /// The same, with the result written straight into the output by `writeResult` (a hot reply, no tree), and a
    /// body that fits one frame.
    func succeed(writing writeResult: (inout [UInt8]) -> Void, body: ArraySlice<UInt8>) {
        guard let connection = end(nil, bytes: body.count) else { return }
        body.withUnsafeBytes { connection.writeHotResult(id: id, body: $0, result: writeResult) }
    }

    /// Whether the client asked for the body as a descriptor (`body_fd: true`).
    var wantsBodyDescriptor: Bool { args["body_fd"]?.boolValue == true }

    /// The same, with a body written as the client reads it (`ReplyBody`: held bytes or a value on disk).
    /// `onDrop` runs if the connection closes before the body is all written (the work behind it may stop);
    /// `amend` edits the result as the final frame is made.
    func succeed(_ result: JSONObject, streaming body: ReplyBody, onDrop: (() -> Void)? = nil,
                 amend: ((inout JSONObject) -> Void)? = nil) {
        // A body still arriving (a spool) has its size only when its final frame is made: its access line waits
        // for that, and its time runs to its last byte, as nginx's request time does.
        let arriving: Bool
        if case .spool = body { arriving = true } else { arriving = false }
        guard let connection = end(result, bytes: body.size, logged: !arriving) else { return onDrop?() ?? () }
        var amend = amend
        if arriving, let access = connection.table.access {
            let original = amend
            amend = { [self] result in
                original?(&result)
                let elapsed = LatencyHistogram.now() &- startedNs
                if access.wants(nanoseconds: elapsed) { logAccess(access, result, bytes: 0, error: nil, elapsed: elapsed) }
            }
        }
        stream = connection.writeStreamed(id: id, result: result, body: body, onDrop: onDrop, amend: amend)
        streamConnection = connection
    }

    /// Answers with the body as a descriptor when the client asked for one (`body_fd: true`), the daemon hands them
    /// out, the body is large enough and the connection has room for one more (or with the miss of a stored body
    /// that failed its check); false, having done nothing: answer with the bytes.
    func succeedWithDescriptor(_ result: JSONObject, body: ReplyBody, keepCopy: Bool = true) -> Bool {
        guard !isFinished, wantsBodyDescriptor, let connection, connection.canSendDescriptor,
              let descriptors = connection.table.descriptors else { return false }
        switch descriptors.make(body, keepCopy: keepCopy) {
        case .descriptor(let d): succeed(result, descriptor: d)
        case .damaged(let error): fail(error)
        case .none: return false
        }
        return true
    }

    /// `body_fd` is a boolean (or null, the same as absent); the message when it is not.
    var bodyDescriptorArgumentProblem: String? {
        guard let v = args["body_fd"], v != .null, v.boolValue == nil else { return nil }
        return "\"body_fd\" must be a boolean"
    }

    /// Ends the request with a result whose body is a descriptor (it goes with the final frame and is closed here
    /// once sent).
    private func succeed(_ result: JSONObject, descriptor: BodyDescriptor) {
        guard let connection = end(result, bytes: descriptor.length) else {
            Glibc.close(descriptor.fd)
            return
        }
        connection.writeResult(id: id, result: result, descriptor: descriptor)
    }

    /// Ends the request with an error.
    public func fail(_ error: WireError) {
        guard let connection = end(error: error.code) else { return }
        connection.table.stats.countError(error.code, op: counters)
        connection.writeError(id: id, error: error)
    }

    public func fail(_ code: ErrorCode, _ message: String, details: JSONObject? = nil) {
        fail(WireError(code, message, details: details))
    }

    private func logAccess(_ access: AccessLog, _ result: JSONObject?, bytes: Int, error: ErrorCode?, elapsed: UInt64) {
        var e = AccessEntry(op: op, connection: clientID, uid: clientUID, outcome: error?.rawValue ?? "ok",
                            bytes: result?["size"]?.intValue.map { Int($0) } ?? bytes, nanoseconds: elapsed)
        if case .string(let key)? = args["key"] {
            e.key = key
            e.namespace = args["namespace"]?.stringValue ?? "default"
        }
        e.url = args["url"]?.stringValue
        if op == OperationName.fetch.rawValue, let result {
            e.httpStatus = result["status"]?.intValue.map { Int($0) }
            e.cacheStatus = result["cache"]?["status"]?.stringValue
        }
        if op == OperationName.imageGet.rawValue { e.cacheStatus = result?["source"]?.stringValue }
        access.request(e)
    }

    /// Stops the work (`onCancel`) and ends the request with `error` (cancelled, deadline_exceeded, unavailable).
    public func cancel(with error: WireError) {
        guard !isFinished else { return }
        runCancelHandler()
        fail(error)
    }

    /// The connection closed: stop the work, count it as cancelled, answer nobody.
    func abandon() {
        guard !isFinished else { return }
        runCancelHandler()
        isFinished = true
        if let connection {
            connection.table.stats.countError(.cancelled, op: counters)
            connection.requestEnded(self)
        }
        connection = nil
    }

    private func runCancelHandler() {
        let handler = onCancel
        onCancel = nil
        handler?()
    }

    /// Marks the request finished and unregisters it, timed and (with its result or error) written to the access
    /// log; returns the connection to answer on, if still open.
    private func end(_ result: JSONObject? = nil, bytes: Int = 0, error: ErrorCode? = nil, logged: Bool = true) -> Connection? {
        guard !isFinished else { return nil }
        isFinished = true
        onCancel = nil
        let elapsed = LatencyHistogram.now() &- startedNs
        counters.latency.record(nanoseconds: elapsed)
        if logged, let access = connection?.table.access, access.wants(nanoseconds: elapsed) { logAccess(access, result, bytes: bytes, error: error, elapsed: elapsed) }
        guard let connection else { return nil }
        connection.requestEnded(self)
        self.connection = nil
        return connection
    }
}
