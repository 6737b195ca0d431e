#if canImport(Glibc)
import Glibc
#endif
import FerryCache

/// The loop thread's end of the journal: records of small sets gather in a buffer during a loop iteration and go to
/// the active file in one `write` at its end (`write()`), after which their sets may be acknowledged.
///
/// ```swift
/// let writer = try JournalWriter(directory: dir, generation: 1, nextSeq: 1)
/// writer.add(key, entry)
/// let written = try writer.write()   // the records now in the file
/// let sealed = writer.seal()         // later: the next write opens a new file; `sealed` goes to the worker
/// ```
final class JournalWriter {
    let directory: String
    private(set) var generation: UInt64
    private(set) var nextSeq: UInt64
    private var fd: Int32 = -1
    /// Bytes in the active file.
    private(set) var fileBytes = 0
    private var buffer: [UInt8] = []
    /// The records in `buffer`, in order.
    private(set) var buffered: [JournalRecord] = []
    /// The disk cost of the records in `buffered` (`JournalRecord.cost`), counted as they are added: summing them
    /// with `reduce` copied every record (its key's Strings and its value retained and released).
    private(set) var bufferedCost = 0

    /// Retired files to write over rather than create (nil: every generation a new file).
    private let spares: JournalSpares?

    init(directory: String, generation: UInt64, nextSeq: UInt64, spares: JournalSpares? = nil) throws(StoreError) {
        self.directory = directory
        self.spares = spares
        self.generation = generation
        self.nextSeq = nextSeq
        try openActive()
    }

    deinit { if fd >= 0 { close(fd) } }

    var path: String { Journal.path(directory, generation: generation) }
    var hasBuffered: Bool { !buffered.isEmpty }

    /// Queues a record for the next `write`, with the next sequence number; returns its disk cost
    /// (`JournalRecord.cost`, which `bufferedCost` counts). `memorySlot`: see `JournalRecord`. (Not the record:
    /// returning the one kept in `buffered` too copied it.)
    @discardableResult
    func add(_ key: CacheKey, _ entry: CacheEntry, memorySlot: SlotHint = .none) -> Int {
        let record = JournalRecord(seq: nextSeq, key: key, entry: entry, memorySlot: memorySlot)
        nextSeq += 1
        Journal.encode(seq: record.seq, key, entry, into: &buffer)
        let cost = record.cost
        bufferedCost += cost
        buffered.append(record)
        return cost
    }

    /// Drops the buffered records unwritten (their sets are refused).
    func discardBuffered() {
        buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
        buffered.removeAll(keepingCapacity: true)
        bufferedCost = 0
    }

    /// Appends the buffered records in one write and returns them. On failure the file is cut back to where it
    /// was (no torn record stays in front of later ones), the records are dropped and the error is thrown.
    /// `sync`: the records are on the disk, not only in the OS, when this returns (`--fsync always`).
    func write(sync: Bool = false) throws(StoreError) -> [JournalRecord] {
        var written: [JournalRecord] = []
        try write(sync: sync, into: &written)
        return written
    }

    /// `write`, the records appended to `written` (moved there, not copied, when it is empty: each copy of a record
    /// retains its key's strings and its value, ~100 instructions a set on the loop thread).
    func write(sync: Bool, into written: inout [JournalRecord]) throws(StoreError) {
        defer {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            buffered.removeAll(keepingCapacity: true)  // moved out when written; dropped when not
            bufferedCost = 0
        }
        guard !buffered.isEmpty else { return }
        if fd < 0 { try openActive() }  // after `seal`, the next write starts the next generation
        var off = 0
        while off < buffer.count {
            let n = buffer.withUnsafeBytes { pwrite(fd, $0.baseAddress! + off, $0.count - off, off_t(fileBytes + off)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { throw failed("write \(path)") }
            off += n
        }
        if sync && fdatasync(fd) != 0 { throw failed("sync \(path)") }
        fileBytes += buffer.count
        if written.isEmpty { swap(&written, &buffered) } else { written.append(contentsOf: buffered) }
    }

    /// A write that failed: the file cut back to its last whole record (the records are dropped on the way out).
    private func failed(_ what: String) -> StoreError {
        let error = BlobFiles.failure(what)
        _ = ftruncate(fd, off_t(fileBytes))
        return error
    }

    /// Closes the active file (for good at a clean stop) and moves to the next generation, so a later write can
    /// never reopen — and truncate — the sealed file; returns the sealed file's path.
    @discardableResult
    func seal() -> String {
        let sealed = path
        if fd >= 0 { close(fd) }
        fd = -1
        fileBytes = 0
        generation += 1
        return sealed
    }

    private func openActive() throws(StoreError) {
        // A spare is written over from its start, its old records left past the new ones (`JournalSpares`). Else
        // O_TRUNC: a file of this generation can only be a leftover that start-up already replayed.
        let reused = spares?.take(as: path) ?? false
        fd = open(path, O_WRONLY | O_CREAT | (reused ? 0 : O_TRUNC) | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw BlobFiles.failure("open \(path)") }
        fileBytes = 0
    }
}
