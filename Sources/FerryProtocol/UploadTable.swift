/// Request bodies that arrive in several frames (PROTOCOL.md section 5): the first frame carries the envelope with
/// `"more": true`, continuation frames `{"id", "more"}` carry the next parts. Pure bookkeeping, tested on its own;
/// the connection starts the request once the last part is in.
///
/// ```swift
/// var uploads = UploadTable()
/// uploads.begin(envelope, firstPart: part1, limit: 1 << 20)   // .pending
/// uploads.next(lastPart, body: part2)                          // .complete(envelope, part1 + part2)
/// ```
public struct UploadTable {
    public init() {}

    @usableFromInline struct Upload {
        var envelope: RequestEnvelope
        var body: [UInt8]
        let limit: Int
    }

    public enum Step: Equatable, Sendable {
        /// More parts to come.
        case pending
        /// The last part arrived: start the request with this body.
        case complete(RequestEnvelope, [UInt8])
        /// The upload broke a rule: answer this error (the rest of its parts will be dropped).
        case failed(WireError)
        /// A part of an upload that already failed or was cancelled: dropped silently.
        case dropped
    }

    @usableFromInline var uploads: [UInt64: Upload] = [:]
    /// Ids whose remaining parts are dropped (the upload failed or was cancelled before its last part).
    private var discarding: Set<UInt64> = []
    /// Body bytes held by unfinished uploads: they count toward the connection's backpressure.
    public private(set) var heldBytes = 0

    public var isEmpty: Bool { uploads.isEmpty && discarding.isEmpty }
    /// Uploads still arriving.
    public var count: Int { uploads.count }

    /// Inlinable: every request asks it (the request gate), and a call made the caller copy the table, two
    /// retains and two releases a request (callgrind).
    @inlinable
    public func contains(_ id: UInt64) -> Bool { !uploads.isEmpty && uploads[id] != nil }

    /// A new request envelope with this id: parts of an earlier, dropped upload with the same id are over.
    public mutating func newRequest(_ id: UInt64) {
        if !discarding.isEmpty { discarding.remove(id) }
    }

    public mutating func begin(_ envelope: RequestEnvelope, firstPart: [UInt8], limit: Int) -> Step {
        discarding.remove(envelope.id)
        guard firstPart.count <= limit else {
            discard(envelope.id)
            return .failed(UploadTable.tooLarge(limit))
        }
        uploads[envelope.id] = Upload(envelope: envelope, body: firstPart, limit: limit)
        heldBytes += firstPart.count
        return .pending
    }

    public mutating func next(_ part: ContinuationEnvelope, body: [UInt8]) -> Step {
        if discarding.contains(part.id) {
            if !part.more { discarding.remove(part.id) }
            return .dropped
        }
        guard var upload = uploads.removeValue(forKey: part.id) else {
            return .failed(WireError(.invalidArgument, "no request with this id is waiting for more of its body"))
        }
        heldBytes -= upload.body.count
        guard upload.body.count + body.count <= upload.limit else {
            if part.more { discard(part.id) }
            return .failed(UploadTable.tooLarge(upload.limit))
        }
        upload.body.append(contentsOf: body)
        guard part.more else { return .complete(upload.envelope, upload.body) }
        heldBytes += upload.body.count
        uploads[part.id] = upload
        return .pending
    }

    /// Parts of a request refused before its upload began are dropped too. Bounded: a client that abandons uploads
    /// without sending their last part cannot grow the set (later stray parts then get `invalid_argument`).
    public mutating func discard(_ id: UInt64) {
        if discarding.count >= UploadTable.maxDiscarding { discarding.removeAll() }
        discarding.insert(id)
    }

    static let maxDiscarding = 1024

    /// Drops an unfinished upload (the client cancelled it); its later parts are dropped.
    public mutating func cancel(_ id: UInt64) -> Bool {
        guard let upload = uploads.removeValue(forKey: id) else { return false }
        heldBytes -= upload.body.count
        discard(id)
        return true
    }

    static func tooLarge(_ limit: Int) -> WireError {
        WireError(.resourceExhausted, "the request body exceeds the limit of \(limit) bytes")
    }
}
