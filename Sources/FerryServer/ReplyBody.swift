import FerryFetch
import FerryProtocol
import FerryStore

/// A reply's body that is written as the client takes it: the connection asks for the next piece only when its
/// output has room (`Connection.pump`), so a client that never reads holds a few pieces of the daemon's memory, not
/// the body.
///
/// ```swift
/// request.succeed(["size": .int(Int64(blob.size))], streaming: .blob(blob, store: store))
/// ```
enum ReplyBody {
    /// Bytes the daemon already holds (a memory-tier value, a fetched body), written without a copy up front.
    case bytes(ArraySlice<UInt8>)
    /// A value on disk, read in pieces; checked as it goes, so the last piece goes out only if the whole is sound.
    case blob(StoredBlob, store: CacheStore)
    /// A byte range of a value on disk (a 206 served from the cache): read in pieces, not checked.
    case blobRange(StoredBlob, Range<Int>, store: CacheStore)
    /// A fetched body still arriving: pieces go out as the transfer writes them (a reader that caught up waits for
    /// more); a transfer that fails voids the reply. Counted as 0: it is on disk, or bounded by the spool.
    case spool(BodySpool)

    /// The bytes counted against the connection while the reply waits (`Connection.streamedBytes`).
    var size: Int {
        switch self {
        case .bytes(let b): return b.count
        case .blob(let blob, _): return blob.size
        case .blobRange(_, let r, _): return r.count
        case .spool: return 0
        }
    }

    /// The part of a value on disk the reply carries: all of it for `.blob`; nil for bytes and spools.
    var blobRange: Range<Int>? {
        switch self {
        case .blob(let blob, _): return 0..<blob.size
        case .blobRange(_, let range, _): return range
        case .bytes, .spool: return nil
        }
    }

    /// Whether the bytes are held in memory for as long as the reply waits (a blob is only a pinned file).
    var holdsMemory: Bool {
        if case .bytes = self { return true }
        return false
    }
}

/// A reply being written in pieces: what is left of its body and how to get the next piece.
final class StreamedReply {
    enum Piece {
        case bytes(ArraySlice<UInt8>, isLast: Bool)
        case failed(WireError)
        /// Nothing to send yet (a spool still arriving): `whenReady` wakes the connection.
        case waiting
    }

    let id: UInt64
    var result: JSONObject
    let body: ReplyBody
    private(set) var sent = 0
    private var reader: BlobReader?
    /// Waits for its spool to grow (`.waiting`): the pump skips it until woken.
    private(set) var isWaiting = false
    /// Its final frame (or error) is written, or it was dropped: no more frames of it.
    var isOver = false
    /// Called when the connection drops the reply unfinished (it closed): the work behind it can stop.
    var onDrop: (() -> Void)?
    /// Called on the result as the final frame is made (a fetch adds the times it knows only then).
    var amend: ((inout JSONObject) -> Void)?

    init(id: UInt64, result: JSONObject, body: ReplyBody) {
        self.id = id
        self.result = result
        self.body = body
    }

    var followsSpool: Bool {
        if case .spool = body { return true }
        return false
    }

    /// What is left of what `size` counted.
    var remaining: Int { max(0, body.size - sent) }

    /// After `.waiting`: `wake` runs once the spool has more (or ended).
    func whenReady(_ wake: @escaping () -> Void) {
        guard case .spool(let spool) = body, !isWaiting else { return }
        isWaiting = true
        spool.whenGrows { [weak self] in
            self?.isWaiting = false
            wake()
        }
    }

    /// The next piece, at most `max` bytes. A damaged blob is reported to the store (which drops it) and is a miss
    /// when none of it was sent yet, as a damaged value read whole is; past the first piece it fails the reply
    /// `unavailable`, and the client drops the chunks it got.
    func next(max: Int) -> Piece {
        switch body {
        case .bytes(let all):
            let start = all.startIndex + sent
            let end = start + min(max, all.endIndex - start)
            sent += end - start
            return .bytes(all[start..<end], isLast: end == all.endIndex)
        case .blob(let blob, let store), .blobRange(let blob, _, let store):
            if reader == nil, let range = body.blobRange {
                switch blob.open(range: range) {
                case .success(let opened): reader = opened
                case .failure(.damaged): return damaged(blob, store)
                case .failure(.busy(let why)):
                    return .failed(WireError(.resourceExhausted, "ferryd cannot open the stored value now (\(why)); try again"))
                }
            }
            switch reader!.next(max: max) {
            case .piece(let bytes, let isLast):
                sent += bytes.count
                if isLast {
                    reader = nil
                    // A whole value read and checked: a later hand-out as a descriptor need not check it again.
                    if case .blob = body { blob.recordChecked(in: store.blobChecks) }
                }
                return .bytes(bytes[...], isLast: isLast)
            case .damaged:
                return damaged(blob, store)
            }
        case .spool(let spool):
            switch spool.read(at: sent, max: max) {
            case .bytes(let bytes):
                sent += bytes.count
                let isLast = spool.state == .complete && sent == spool.length
                return .bytes(bytes[...], isLast: isLast)
            case .end: return .bytes([][...], isLast: true)
            case .wait: return .waiting
            case .failed(let failure):
                var error = failure.wireError
                if sent > 0 { error.message += " (after \(sent) bytes of the body: drop them)" }
                return .failed(error)
            }
        }
    }

    private func damaged(_ blob: StoredBlob, _ store: CacheStore) -> Piece {
        reader = nil
        store.reportDamaged(blob)
        if sent == 0 { return .failed(WireError.notFound(blob.key)) }
        return .failed(WireError(.unavailable, "the stored value of \(blob.size) bytes was damaged on disk and is removed; ask again",
                                 details: ["damaged": .bool(true)]))
    }
}
