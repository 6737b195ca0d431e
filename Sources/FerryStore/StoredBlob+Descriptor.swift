#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Blob files that have been read whole and matched their checksum since the daemon started, so a value handed out
/// as a descriptor is checked once, not on every hit. A file is written once and renamed into place, never changed
/// (`BlobFiles`), so a pass holds until the store finds it damaged (`forget`). Bounded: past `limit` names it starts
/// over, which costs a re-check, never a wrong answer.
///
/// ```swift
/// let checks = BlobChecks()
/// blob.readOnlyDescriptor(checks: checks)   // reads and checks the file the first time only
/// ```
public final class BlobChecks: Sendable {
    private let passed = Mutex<Set<String>>([])
    private let limit: Int

    /// The largest file checked on the loop thread before a hand-out (about 5 ms); larger ones are checked by the
    /// first read of their bytes.
    public static let checkLimit = 16 << 20

    public init(limit: Int = 65_536) { self.limit = limit }

    func hasPassed(_ hash: String) -> Bool { passed.withLock { $0.contains(hash) } }

    func pass(_ hash: String) {
        passed.withLock { set in
            if set.count >= limit { set.removeAll(keepingCapacity: true) }
            set.insert(hash)
        }
    }

    /// The file was found damaged: check it again before handing it out.
    public func forget(_ hash: String) { _ = passed.withLock { $0.remove(hash) } }

    public var count: Int { passed.withLock { $0.count } }
}

extension StoredBlob {
    /// A read-only descriptor of the value's file, for a client to read itself (PROTOCOL.md, "bodies as
    /// descriptors"). What it shows is this value for as long as it is held: the file is written once under a
    /// temporary name, renamed into place and never written again, and a delete or a newer value only unlinks or
    /// replaces the name, not the bytes. The file is exactly the value (offset 0, length `size`), so nothing beyond
    /// it is visible. The whole file is checked against the value's checksum before its first hand-out (`checks`
    /// remembers it passed): a damaged value is `.damaged`, as a read of it would be. The check reads the file on
    /// the caller's thread (the loop's), so only files up to `checkLimit` bytes are checked here; a larger one not
    /// checked yet is `.busy` (its caller sends the bytes, and that read, checked as it goes, records the pass:
    /// `recordChecked`).
    ///
    /// ```swift
    /// if case .success(let fd) = blob.readOnlyDescriptor(checks: store.blobChecks) { send(fd); close(fd) }
    /// ```
    public func readOnlyDescriptor(checks: BlobChecks, checkLimit: Int = BlobChecks.checkLimit) -> Result<Int32, BlobOpenFailure> {
        if sum != nil, size > checkLimit, !checks.hasPassed(hash) { return .failure(.busy("not checked yet")) }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            let e = errno
            return .failure(e == EMFILE || e == ENFILE || e == ENOMEM ? .busy(String(cString: strerror(e))) : .damaged)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, Int(st.st_size) == size, (st.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            return .failure(.damaged)
        }
        if let expected = sum, !checks.hasPassed(hash) {
            guard BlobFiles.matches(fd, size: size, expected) else {
                Glibc.close(fd)
                return .failure(.damaged)
            }
            checks.pass(hash)
        }
        return .success(fd)
    }

    /// A whole pass over the value checked out (`BlobReader` hands out the last piece only then): no need to check
    /// the file again before handing it out.
    public func recordChecked(in checks: BlobChecks) {
        if sum != nil { checks.pass(hash) }
    }
}
