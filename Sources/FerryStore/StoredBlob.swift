#if canImport(Glibc)
import Glibc
#endif
import FerryBytes
import FerryCache
import Synchronization

/// A value read from disk without its bytes: a blob file too large to hold whole while a slow client takes it, read
/// in pieces (`BlobReader`) as the reply drains. Its file is pinned from the lookup until the reader is done, so a
/// delete or a newer set in between never takes the bytes away (the reply shows the value as it was when read).
///
/// ```swift
/// store.read(key, now: now, streamAbove: 64 * 1024) { result in
///     if case .success(.blob(let blob)?) = result, case .success(let reader) = blob.open() {
///         while case .piece(let bytes) = reader.next(max: 256 * 1024) { send(bytes) }
///     }
/// }
/// ```
public final class StoredBlob: @unchecked Sendable {
    public let key: CacheKey
    public let size: Int
    public let createdAt: Int64
    public let expiresAt: Int64?
    let path: String
    let hash: String
    let sum: ValueSum?
    /// Called once, on the thread that drops the last reference (the loop thread): unpins the file.
    private let release: @Sendable (String) -> Void

    init(key: CacheKey, row: DiskRow, path: String, hash: String, release: @escaping @Sendable (String) -> Void) {
        self.key = key
        size = row.size
        createdAt = row.createdAt
        expiresAt = row.expiresAt
        self.path = path
        self.hash = hash
        sum = row.sum
        self.release = release
    }

    deinit { release(hash) }

    /// Where the value's file is (pinned while this exists): to copy a stored partial body into a resumed one.
    public var filePath: String { path }

    /// Opens the file for one pass over it: `.damaged` when it is missing or not its size (it is then reported),
    /// `.busy` when the process is out of descriptors or memory (a load, not damage: nothing is dropped).
    public func open() -> Result<BlobReader, BlobOpenFailure> { open(range: 0..<size) }

    /// A pass over `range` of the value only (a byte range a client asked for): read as the whole is, but not
    /// checked (the checksum covers the whole value).
    public func open(range: Range<Int>) -> Result<BlobReader, BlobOpenFailure> {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            let e = errno
            return .failure(e == EMFILE || e == ENFILE || e == ENOMEM ? .busy(String(cString: strerror(e))) : .damaged)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, Int(st.st_size) == size else {
            Glibc.close(fd)
            return .failure(.damaged)
        }
        return .success(BlobReader(fd: fd, blob: self, range: range.clamped(to: 0..<size)))
    }
}

public enum BlobOpenFailure: Error, Equatable {
    case damaged
    case busy(String)
}

/// One pass over a `StoredBlob`, in pieces, checking the value's checksum as it goes: the last piece is handed out
/// only once the whole value proved undamaged, so a damaged value never reaches a client whole.
public final class BlobReader {
    public enum Step: Equatable {
        /// The next bytes; `isLast` when they end the value (and the value checked out).
        case piece([UInt8], isLast: Bool)
        /// The bytes on disk are not the ones written: the caller answers with an error and reports it.
        case damaged
    }

    public let blob: StoredBlob
    private let fd: Int32
    public private(set) var offset: Int
    private let end: Int
    /// The value's sum so far, on a pass over the whole value (only that can be checked); nil otherwise.
    private var sum: ValueSum.Running?

    init(fd: Int32, blob: StoredBlob, range: Range<Int>) {
        self.fd = fd
        self.blob = blob
        offset = range.lowerBound
        end = range.upperBound
        sum = range == 0..<blob.size ? blob.sum?.running(count: blob.size) : nil
    }

    deinit { Glibc.close(fd) }

    public var remaining: Int { end - offset }

    /// Reads up to `max` bytes (rounded down to whole 32-byte stripes, as the checksum takes them, unless it is the
    /// rest of the value).
    public func next(max: Int) -> Step {
        let want = remaining <= max ? remaining : Swift.max(32, max & ~31)
        // Shorter than its row says: truncated under the daemon.
        guard let bytes = FileRead.exactly(fd, count: want, at: offset) else { return .damaged }
        offset += want
        sum?.add(bytes)
        let isLast = remaining == 0
        if isLast, let sum, let expected = blob.sum, !sum.matches(expected) { return .damaged }
        return .piece(bytes, isLast: isLast)
    }
}

/// Exactly `count` bytes of a file at `offset` (`pread` until they are in, through `EINTR`), into a new array that
/// is not zero-filled first; nil when the file ends before them or a read fails (`errno` says why).
///
/// ```swift
/// FileRead.exactly(fd, count: 4096, at: 0)   // [UInt8]? of 4096 bytes
/// ```
public enum FileRead {
    public static func exactly(_ fd: Int32, count: Int, at offset: Int) -> [UInt8]? {
        var short = false
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, filled in
            var got = 0
            while got < count {
                let n = pread(fd, buffer.baseAddress! + got, count - got, off_t(offset + got))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { short = true; break }
                got += n
            }
            filled = got
        }
        return short ? nil : bytes
    }
}

/// Blob files a reply is still reading, shared by the loop thread (which releases them) and the disk worker (which
/// pins them at lookup and never removes a pinned file).
final class BlobPins: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    func pin(_ hash: String) { counts.withLock { $0[hash, default: 0] += 1 } }

    /// True when this was the last pin: the file may be unreferenced now.
    func unpin(_ hash: String) -> Bool {
        counts.withLock { c in
            guard let n = c[hash] else { return false }
            if n <= 1 {
                c[hash] = nil
                return true
            }
            c[hash] = n - 1
            return false
        }
    }

    func isPinned(_ hash: String) -> Bool { counts.withLock { $0[hash] != nil } }

    var count: Int { counts.withLock { $0.count } }
}
