import FerryProtocol
import FerryStore

/// A reply body handed to the client as a descriptor: it reads `length` bytes from `offset` itself.
struct BodyDescriptor {
    let fd: Int32
    let offset: Int
    let length: Int
}

/// Makes the descriptors of large reply bodies, for clients that ask for them (`body_fd`, PROTOCOL.md "bodies as
/// descriptors"): no body byte crosses the socket. A value on disk is its blob file opened read-only (checked whole
/// before its first hand-out, `BlobChecks`); a value in memory is a sealed memory file (`SealedCopies`, kept for the
/// next hand-out). Neither lets a client write, nor see anything but its value, and neither changes when the key is
/// deleted or set again (the file is never rewritten, the memory file is sealed). A body still arriving (a spool)
/// has no descriptor. Loop thread only.
///
/// ```swift
/// let descriptors = BodyDescriptors(minBytes: 65536, copies: SealedCopies(), checks: store.blobChecks)
/// if let d = descriptors.make(.blob(blob, store: store)) { connection.writeResult(id: id, result: r, descriptor: d) }
/// ```
final class BodyDescriptors {
    /// Bodies smaller than this go through the socket: below it a descriptor costs more than the bytes.
    let minBytes: Int
    let copies: SealedCopies
    let checks: BlobChecks
    /// The largest blob checked on the loop before its first hand-out; a larger one goes as bytes until a read of
    /// it has checked it (`StoredBlob.readOnlyDescriptor`).
    let checkLimit: Int
    /// Descriptors handed out, and the bodies' bytes that did not cross the socket.
    private(set) var sent: UInt64 = 0
    private(set) var sentBytes: UInt64 = 0
    /// Times a descriptor's frame was due while earlier bytes were still queued or the socket was full (it waits).
    var waits: UInt64 = 0

    init(minBytes: Int, copies: SealedCopies, checks: BlobChecks, checkLimit: Int = BlobChecks.checkLimit) {
        self.minBytes = minBytes
        self.checkLimit = checkLimit
        self.copies = copies
        self.checks = checks
    }

    /// What `make` found.
    enum Made {
        case descriptor(BodyDescriptor)
        /// The blob failed its check: it is reported to the store (which drops it); the answer is a miss, as for a
        /// damaged value read whole.
        case damaged(WireError)
        /// The body is small or still arriving, or no descriptor can be had now (out of descriptors or memory):
        /// the bytes go through the socket as before.
        case none
    }

    /// The body's descriptor, the caller's to send and close. `keepCopy`: bytes held in memory are a stored value
    /// that may be asked for again (its sealed copy is kept for that); false for a body just downloaded.
    func make(_ body: ReplyBody, keepCopy: Bool = true) -> Made {
        guard body.size >= minBytes else { return .none }
        let made: BodyDescriptor
        switch body {
        case .bytes(let bytes):
            guard let fd = copies.descriptor(of: bytes, keep: keepCopy) else { return .none }
            made = BodyDescriptor(fd: fd, offset: 0, length: bytes.count)
        case .blob(let blob, let store), .blobRange(let blob, _, let store):
            let range = body.blobRange ?? 0..<blob.size
            switch blob.readOnlyDescriptor(checks: checks, checkLimit: checkLimit) {
            case .success(let fd): made = BodyDescriptor(fd: fd, offset: range.lowerBound, length: range.count)
            case .failure(.damaged):
                store.reportDamaged(blob)
                return .damaged(WireError.notFound(blob.key))
            case .failure(.busy): return .none
            }
        case .spool:
            return .none
        }
        sent += 1
        sentBytes += UInt64(made.length)
        return .descriptor(made)
    }

    /// The `stats` member `descriptors` (not `body_fd`: that name in a result announces a descriptor).
    var json: JSONObject {
        ["sent": .int(Int64(sent)), "bytes": .int(Int64(sentBytes)), "waits": .int(Int64(waits)), "sealed_copies_made": .int(Int64(copies.made)),
         "sealed_copies_reused": .int(Int64(copies.reused)), "sealed_copies_kept_bytes": .int(Int64(copies.heldBytes))]
    }
}
