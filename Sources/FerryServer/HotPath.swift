import FerryCache
import FerryBytes
import FerryProtocol

/// The fast path of the hot operations: a request in the plain shape (`HotEnvelope`) is answered while its frame
/// is read — no `JSONValue` tree, no `RequestContext`, no closures — when its operation can answer it at once
/// (`HotOperation`: a memory hit, a ping without arguments). Everything else, and every error, takes the general
/// path (built from the scan, not parsed again); both paths write the same envelope and give the same bytes for
/// the same request (`HotPathTests` sends each request both ways; `--no-hot-path` turns this path off).
///
/// ```swift
/// if let hot = HotEnvelope.scan(frame.json), connection.answerHot(hot, frame) { return }  // answered
/// ```
protocol HotOperation: AnyObject {
    /// Answers `request` through `reply` and returns true, or returns false having done nothing.
    func answerHot(_ request: HotRequest, _ reply: HotReply) -> Bool
}

/// A request of the hot shape: its envelope and the frame's bytes (valid only during `answerHot`).
struct HotRequest {
    let envelope: HotEnvelope
    let json: UnsafeRawBufferPointer
    let body: UnsafeRawBufferPointer
    /// The key's digest when the request was read ahead (`ReadBatch`): its key was accepted then, and is not checked
    /// or hashed again.
    var digest: Int? = nil

    /// The string in `range` of the JSON (printable ASCII: the scan allowed nothing else).
    func string(_ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: json[range]), as: UTF8.self)
    }

    /// The request's `key` and `namespace` where they lie, when both are valid (a lookup makes no `CacheKey`);
    /// nil (the general path answers, with the error) when either is missing or refused.
    var cacheKeyProbe: CacheKeyProbe? {
        // A digest comes only with a key the read-ahead's probe accepted (`ReadBatch`): the same bytes.
        guard let digest, let keyRange = envelope.key else { return HotRequest.probe(envelope, json) }
        return CacheKeyProbe(accepted: envelope.namespace.map { UnsafeRawBufferPointer(rebasing: json[$0]) },
                             key: UnsafeRawBufferPointer(rebasing: json[keyRange]), digest: digest)
    }

    /// The probe of a scanned envelope's key, checked by `CacheKeyProbe`'s rules (a request's, and the read-ahead's
    /// of a frame not yet handled, `ReadBatch`); nil when the envelope names no key or a refused one.
    @inline(__always)
    static func probe(_ envelope: HotEnvelope, _ json: UnsafeRawBufferPointer) -> CacheKeyProbe? {
        guard let keyRange = envelope.key else { return nil }
        return CacheKeyProbe(namespace: envelope.namespace.map { UnsafeRawBufferPointer(rebasing: json[$0]) },
                             key: UnsafeRawBufferPointer(rebasing: json[keyRange]))
    }

    /// The same as a `CacheKey` (for a set, which keeps it), validated by the probe's rules.
    var cacheKey: CacheKey? { cacheKeyProbe?.cacheKey }
}

/// How a hot operation answers: one final frame, written straight into the connection's output.
struct HotReply {
    /// Borrowed, neither retained nor checked: the reply lives only while `answerHot` runs, inside a call on this
    /// very connection. A strong reference cost a retain and a release a request, `unowned` a check, and even an
    /// `unowned(unsafe)` one was retained around each call made on it (callgrind); `_withUnsafeGuaranteedRef` is not.
    private let connectionRef: Unmanaged<Connection>
    /// The connection, for a reply that keeps it (a set waiting for its journal write).
    var connection: Connection { connectionRef.takeUnretainedValue() }
    let id: UInt64
    /// The operation's counters (a reply written later counts its error there).
    unowned(unsafe) let counters: OperationCounters

    /// The largest body a hot reply carries in its one frame (a larger one is streamed: the general path's work).
    var maxBody: Int { connectionRef._withUnsafeGuaranteedRef { $0.pieceBytes } }

    init(connection: Connection, id: UInt64, counters: OperationCounters) {
        connectionRef = Unmanaged.passUnretained(connection)
        self.id = id
        self.counters = counters
    }

    /// The same for a request that may ask for its body as a descriptor (`body_fd`): a body the general path would
    /// hand out as one is the general path's.
    func maxBody(bodyFD: Bool?) -> Int {
        guard bodyFD == true else { return maxBody }
        return connectionRef._withUnsafeGuaranteedRef { connection in
            guard let descriptors = connection.table.descriptors else { return connection.pieceBytes }
            return min(connection.pieceBytes, descriptors.minBytes - 1)
        }
    }

    /// Writes `{"id":…,"final":true,"result":` + what `result` writes + `}` and the body.
    func succeed(body: UnsafeRawBufferPointer, result: (inout ByteCursor) -> Void) {
        let id = id
        connectionRef._withUnsafeGuaranteedRef { $0.writeHotFrame(id: id, body: body, result: result) }
    }
}

extension Connection {
    /// Answers a request of the hot shape if its operation can, after the same gate as every request; true when
    /// answered (and counted as the general path counts it).
    /// `digest`: the key's, when the frame was read ahead (`ReadBatch`).
    func answerHot(_ hot: HotEnvelope, _ frame: FrameView, digest: Int? = nil) -> Bool {
        guard let found = table.router.hotEntry(UnsafeRawBufferPointer(rebasing: frame.json[hot.op])) else { return false }
        // The entry borrowed, not retained: the router keeps it for the daemon's life (each reference taken from
        // it here was a retain and a release, callgrind).
        return found._withUnsafeGuaranteedRef { entry in answerHot(hot, frame, entry, digest) }
    }

    private func answerHot(_ hot: HotEnvelope, _ frame: FrameView, _ entry: Router.Entry, _ digest: Int?) -> Bool {
        // The handler is used where the entry holds it (`guard let` made a copy: a retain and a release).
        guard entry.hot != nil else { return false }
        // A body on an operation that takes none: the general path refuses it.
        if !frame.body.isEmpty && !entry.takesBody { return false }
        let situation = gateSituation(id: hot.id, operationKnown: true)
        guard case .admit = RequestGate.decide(op: entry.name, situation) else { return false }
        let request = HotRequest(envelope: hot, json: frame.json, body: frame.body, digest: digest)
        guard entry.hot.unsafelyUnwrapped.answerHot(request, HotReply(connection: self, id: hot.id, counters: entry.counters)) else { return false }
        table.stats.requestsTotal += 1
        usage.requests += 1
        entry.counters.requests += 1
        entry.counters.latency.recordInstant()
        // Asked of the log borrowed (`if let` made a copy: a retain and a release a request).
        if let log = table.accessRef, log._withUnsafeGuaranteedRef({ $0.wants(nanoseconds: 0) }), let access = table.access {
            // A set is acknowledged at the end of the iteration: its line says what was taken, the body it stored.
            let isSet = entry.name == OperationName.cacheSet.rawValue
            access.request(AccessEntry(op: entry.name, connection: id, uid: peerUID,
                                       key: hot.key.map(request.string), namespace: hot.key == nil ? nil : hot.namespace.map(request.string) ?? CacheKey.defaultNamespace,
                                       outcome: "ok", bytes: isSet ? frame.body.count : lastHotBodyBytes, nanoseconds: 0))
        }
        return true
    }
}
