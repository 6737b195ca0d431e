import FerryStore

/// A response body as a fetch serves it: bytes in memory (a small response, from the store or the origin), a body
/// still arriving from the origin (`BodySpool`, read as it grows), or a large stored body in the store's file
/// (`StoredBlob`, read in pieces). Nothing here copies a large body into memory; `collect` does, for the callers
/// that need the whole of a bounded one (the image loader).
///
/// ```swift
/// switch outcome.body {
/// case .bytes(let b): send(b)
/// case .spool(let s): follow(s)          // s.read(at:max:), s.whenGrows
/// case .stored(let blob): stream(blob)   // blob.open() → BlobReader
/// }
/// ```
public enum FetchBody {
    case bytes(ArraySlice<UInt8>)
    case spool(BodySpool)
    case stored(StoredBlob)
    /// A byte range of a large stored body (a 206 from the cache).
    case storedRange(StoredBlob, Range<Int>)

    public static var empty: FetchBody { .bytes([][...]) }

    /// The size when it is known now (a spool still receiving has none).
    public var knownSize: Int? {
        switch self {
        case .bytes(let b): return b.count
        case .spool(let s): return s.state == .complete ? s.length : nil
        case .stored(let blob): return blob.size
        case .storedRange(_, let r): return r.count
        }
    }

    /// `range` of this body (of `knownSize`): a slice in memory, or a range of the stored file.
    public func part(_ range: Range<Int>) -> FetchBody {
        switch self {
        case .bytes(let b): return .bytes(b[(b.startIndex + range.lowerBound)..<(b.startIndex + range.upperBound)])
        case .stored(let blob): return .storedRange(blob, range)
        case .spool, .storedRange: return self
        }
    }

    /// The bytes, when they are in memory already.
    public var bytesInMemory: ArraySlice<UInt8>? {
        switch self {
        case .bytes(let b): return b
        case .spool(let s): return s.completeInMemory
        case .stored, .storedRange: return nil
        }
    }

    /// The whole body in memory once it is complete, at most `limit` bytes (more: `.tooLarge`). Loop thread; a
    /// spool is followed as it grows, a stored body read from its file. Bytes already in memory are not copied:
    /// a body the store's memory tier holds stays one copy, however long the caller keeps it.
    public func collect(limit: Int, _ done: @escaping (Result<ArraySlice<UInt8>, FetchFailure>) -> Void) {
        switch self {
        case .bytes(let b):
            done(b.count <= limit ? .success(b) : .failure(.tooLarge(limit: limit)))
        case .stored, .storedRange:
            let (blob, range): (StoredBlob, Range<Int>)
            if case .storedRange(let b, let r) = self { (blob, range) = (b, r) } else if case .stored(let b) = self { (blob, range) = (b, 0..<b.size) } else { return }
            guard range.count <= limit else { return done(.failure(.tooLarge(limit: limit))) }
            guard case .success(let reader) = blob.open(range: range) else {
                return done(.failure(.unavailable(curlCode: 0, message: "the stored body could not be read")))
            }
            var out: [UInt8] = []
            out.reserveCapacity(range.count)
            while true {
                switch reader.next(max: 1 << 20) {
                case .piece(let bytes, let isLast):
                    out += bytes
                    if isLast { return done(.success(out[...])) }
                case .damaged:
                    return done(.failure(.unavailable(curlCode: 0, message: "the stored body was damaged on disk")))
                }
            }
        case .spool(let spool):
            if let whole = spool.completeInMemory {
                return done(whole.count <= limit ? .success(whole) : .failure(.tooLarge(limit: limit)))
            }
            FetchBody.follow(spool, from: [], limit: limit, done)
        }
    }

    private static func follow(_ spool: BodySpool, from start: [UInt8], limit: Int,
                               _ done: @escaping (Result<ArraySlice<UInt8>, FetchFailure>) -> Void) {
        var out = start
        while true {
            switch spool.read(at: out.count, max: 1 << 20) {
            case .bytes(let piece):
                out += piece
                if out.count > limit { return done(.failure(.tooLarge(limit: limit))) }
            case .end:
                // A body that stayed in memory: its own bytes (the store's record, once stored), not the copy
                // gathered here.
                if let whole = spool.completeInMemory, whole.count == out.count { return done(.success(whole)) }
                return done(.success(out[...]))
            case .failed(let failure): return done(.failure(failure))
            case .wait:
                return spool.whenGrows { follow(spool, from: out, limit: limit, done) }
            }
        }
    }
}
