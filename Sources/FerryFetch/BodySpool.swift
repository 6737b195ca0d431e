#if canImport(Glibc)
import Glibc
#endif
import FerryBytes
import FerryStore

/// One response body as it arrives from the origin, readable while it grows by every request that follows the
/// transfer (the first, the coalesced, the late joiners), each at its own pace. Up to `Config.memoryBytes` it stays
/// in memory (the common small response: no file, no syscall); past that the whole body moves to a file in the
/// spool directory, and memory holds at most one write buffer. A reader reads `0..<length`; when it has caught up it
/// asks to be woken (`whenGrows`), and the spool wakes it once enough is new (`announce`) or the body ends.
///
/// Once complete, the file is handed to the store (`takeFile`) — renamed, not copied; readers still holding the
/// spool keep reading through its open descriptor. A body nothing keeps and one reader follows (`streamThrough`)
/// skips the file while that reader keeps up: past `memoryBytes` it stays in memory in reply-sized pieces, each
/// let go once read (`StreamWindow`), and only a reader that falls `windowBytes` behind sends the rest to a file.
/// Loop thread only.
///
/// ```swift
/// let spool = BodySpool(config: .init(directory: "/var/cache/ferry/spool"))
/// _ = spool.append(bytes)              // from the transfer's write callback
/// spool.announce(nowMs: now)           // after libcurl returns: wakes readers that wait
/// spool.read(at: 0, max: 256 * 1024)   // .bytes([…]), .wait, .end or .failed(…)
/// spool.finish(.success(()))
/// ```
public final class BodySpool {
    public struct Config: Sendable {
        /// Where bodies larger than `memoryBytes` are written; nil keeps every body in memory.
        public var directory: String?
        /// One reply piece: a body that fits one frame never touches the disk; with 64 transfers at once, bodies
        /// hold at most 64 × (this + `writeBytes`) of memory, whatever their sizes (a body streamed through
        /// memory: up to twice `windowBytes` while its transfer runs, this once it has ended).
        public var memoryBytes = 256 * 1024
        /// Bytes gathered before one write to the file.
        public var writeBytes = 128 * 1024
        /// How far the one reader of a body nothing keeps (`streamThrough`) may fall behind: the transfer then
        /// waits for it (`isWindowFull`, libcurl paused) until it has read half of that. Bytes appended past
        /// twice this (by a feeder that does not wait) go to a file after all: memory stays bounded either way.
        public var windowBytes = 2 * 1024 * 1024
        /// How long a transfer may wait for the reader of its streamed body (libcurl paused): past it, what is
        /// unread goes to a file and the transfer goes on at the origin's pace (`stopStreaming`). A paused
        /// transfer holds one of the origin's connections, and its time limit runs on.
        public var maxPauseMs: Int64 = 2000
        /// Spooling stops (the transfer fails `resource_exhausted`) rather than leave the file system less free
        /// than this: the store, the journal and other programs keep room. Checked every `checkEvery` bytes.
        public var keepFree = 256 * 1024 * 1024
        public var checkEvery = 64 * 1024 * 1024

        public init(directory: String?) { self.directory = directory }
    }

    public enum State: Equatable {
        case receiving, complete, failed
    }

    public enum Step: Equatable {
        case bytes([UInt8])
        /// Caught up with a body still arriving: ask `whenGrows`.
        case wait
        case end
        case failed(FetchFailure)
    }

    public let config: Config
    public private(set) var state = State.receiving
    /// The exchange's times, once it completed.
    public internal(set) var timing: OriginTiming?
    private(set) var failure: FetchFailure?
    // Internal rather than private where `BodySpool+Streaming` reaches them: `length`, `memory`, `fd`, the
    // streaming state below, `spill(writing:)` and `fail`. Nothing else in the module touches them.
    /// Bytes readers may read now (in memory, or written to the file).
    public internal(set) var length = 0
    var memory: [UInt8] = []
    private var pending: [UInt8] = []
    /// Asked by `streamThrough`: once past `memoryBytes`, the body goes to `window` rather than to a file.
    var streams = false
    /// The unread part of a streamed body (nil unless streaming past `memoryBytes`).
    var window: StreamWindow?
    /// The body offset of the file's first byte: 0, or where a window that fell behind went to the file.
    var fileBase = 0
    /// Nobody reads a streamed body any more (`discardUnread`): its bytes are counted, not kept.
    var discarding = false
    /// Runs once the reader has made room in a full window (`whenRoom`).
    var onRoom: (() -> Void)?
    var fd: Int32 = -1
    /// The spool file while the spool owns it (nil once handed to the store).
    private(set) var path: String?
    private var sum: ChecksumBuilder?
    private var wakers: [() -> Void] = []
    private var wokenAtLength = 0
    private var wokenAtMs: Int64 = 0
    /// New bytes that wake a waiting reader (one reply piece: a reader following a fast download sends whole
    /// pieces), or the time since the last wake after which any new byte does.
    static let wakeBytes = 256 * 1024
    static let wakeAfterMs: Int64 = 10

    public init(config: Config) { self.config = config }

    deinit {
        if fd >= 0 { close(fd) }
        if let path { unlink(path) }
    }

    /// Everything received, written to the file or not.
    public var receivedBytes: Int { length + pending.count }
    /// The memory this body holds now (what the transfer budget counts).
    public var memoryBytes: Int { memory.count + pending.count + (window?.heldBytes ?? 0) }
    public var isSpilled: Bool { fd >= 0 }
    /// Whether the body streams through memory past `memoryBytes` now (`streamThrough`).
    public var isStreamingThrough: Bool { window != nil }
    /// The whole body, when it is complete and never left memory (a streamed body lets its read pieces go).
    public var completeInMemory: ArraySlice<UInt8>? {
        state == .complete && fd < 0 && window == nil && !discarding ? (shared ?? memory[...]) : nil
    }
    /// A complete in-memory body's bytes inside the store's record, once the store keeps them (`share`).
    private var shared: ArraySlice<UInt8>?

    /// The store keeps this complete in-memory body inside its record (`ResponseStore.store`): from now on the spool
    /// reads from there and lets its own copy go. Why: a reader that keeps the body (the image loader's memory
    /// tier) and the store's memory tier then hold one copy of it, not two. Ignored unless `bytes` has this body's
    /// length.
    public func share(_ bytes: ArraySlice<UInt8>) {
        guard state == .complete, fd < 0, window == nil, shared == nil, bytes.count == memory.count else { return }
        shared = bytes
        memory = []
    }

    /// The length the origin announced (`Content-Length`), so the body's checksum is made as it arrives; a body of
    /// another length (or one resumed from a partial) has its checksum made by the store instead.
    public func expect(_ count: Int?) {
        if let count, count >= 0, receivedBytes == 0 { sum = ChecksumBuilder(count: count) }
    }

    /// Nobody will hand this body to the store: its checksum is not made (`takeFile` then says nil, and a store
    /// given the file anyway reads it once to make one). About a tenth of ferryd's time on a large download that
    /// is not stored (perf).
    public func forgoChecksum() { sum = nil }

    // MARK: Resuming

    /// Bytes copied in from an earlier, interrupted download of the same response (`prefill`).
    public private(set) var prefilled = 0

    /// Starts the body with `count` bytes of `file` from `offset` (a part of the body the store kept): copied in
    /// the kernel (`sendfile`), so the transfer only has to bring the rest. Before any byte arrives; several
    /// prefills follow each other (two stored parts combined into one).
    public func prefill(from file: String, offset start: Int = 0, count: Int) -> FetchFailure? {
        guard receivedBytes == prefilled, state == .receiving, count > 0 else { return .internalError("prefill of a spool already in use") }
        let source = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard source >= 0 else { return BodySpool.failure("open \(file)") }
        defer { close(source) }
        if fd < 0, let failure = spill() { return failure }
        var offset = off_t(start)
        while Int(offset) < start + count {
            let n = sendfile(fd, source, &offset, start + count - Int(offset))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return BodySpool.failure("copy \(file)") }
        }
        length += count
        prefilled = length
        wokenAtLength = length
        sum = nil
        return nil
    }

    /// The same from bytes in memory (a part small enough to come back from the store whole).
    public func prefill(bytes: ArraySlice<UInt8>) -> FetchFailure? {
        guard receivedBytes == prefilled, state == .receiving, !bytes.isEmpty else { return .internalError("prefill of a spool already in use") }
        if let failure = bytes.withUnsafeBytes({ append($0) }) { return failure }
        if let failure = flush() { return failure }
        sum = nil
        prefilled = length
        wokenAtLength = length
        return nil
    }

    /// The origin sent the whole body instead of the rest (its validator changed, or it ignores ranges): what
    /// was copied in goes. Called at the response's head, before any of its body, when nobody reads the spool yet.
    public func discardPrefill() {
        guard prefilled > 0, pending.isEmpty, length == prefilled else { return }
        if fd >= 0 {
            _ = ftruncate(fd, 0)
            lseek(fd, 0, SEEK_SET)
        } else {
            memory.removeAll()
        }
        length = 0
        prefilled = 0
        wokenAtLength = 0
    }

    /// What a download that ended early has (the bytes written to its file), or a complete part of a body (a
    /// range from 0), handed over to be kept as a partial body: nil when it never left memory or holds nothing.
    public func takePartialFile() -> (path: String, size: Int)? {
        guard let path, fd >= 0, fileBase == 0, length > 0 else { return nil }
        self.path = nil
        return (path, length)
    }

    /// Takes the next bytes; a failure means they cannot be kept (the spool file could not be written).
    public func append(_ bytes: UnsafeRawBufferPointer) -> FetchFailure? {
        if let failure { return failure }
        guard state == .receiving else { return .internalError("bytes after the body ended") }
        sum?.add(bytes)
        if discarding {
            length += bytes.count
            return nil
        }
        if fd < 0 {
            if streams && (window != nil || memory.count + bytes.count > config.memoryBytes) {
                return appendToWindow(bytes)
            }
            if memory.count + bytes.count <= config.memoryBytes || config.directory == nil {
                memory.append(contentsOf: bytes)
                length = memory.count
                return nil
            }
            if let failure = spill() { return fail(failure) }
        }
        pending.append(contentsOf: bytes)
        if pending.count >= config.writeBytes, let failure = flush() { return fail(failure) }
        return nil
    }

    public func append(_ bytes: [UInt8]) -> FetchFailure? { bytes.withUnsafeBytes { append($0) } }

    /// After the transport handed over a burst of bytes (outside libcurl's callbacks): readers waiting at the end
    /// are woken once 64 KiB are new, or any byte is and 10 ms passed since the last wake.
    /// Returns true when it held a wake back (under 64 KiB new within 10 ms): call it again later (`CurlMulti`
    /// does, 10 ms on), or the readers would wait for the next bytes, however late they come.
    @discardableResult
    public func announce(nowMs: Int64) -> Bool {
        guard !wakers.isEmpty, state == .receiving, receivedBytes > wokenAtLength else { return false }
        guard receivedBytes - wokenAtLength >= BodySpool.wakeBytes || nowMs - wokenAtMs >= BodySpool.wakeAfterMs else { return true }
        if let failure = flush() { _ = fail(failure) }
        wokenAtMs = nowMs
        wake()
        return false
    }

    /// The transfer ended: the last bytes are written and every reader woken (a failure voids what they read).
    /// `beforeWaking` runs once the state is final and before any reader is woken (the store keeps the body
    /// then, so that readers finish with the bytes the store holds).
    public func finish(_ result: Result<Void, FetchFailure>, beforeWaking: () -> Void = {}) {
        // Failed already (a write inside libcurl's callback, where nobody may be woken): the readers learn it now.
        guard state == .receiving else {
            beforeWaking()
            return wake()
        }
        if case .failure(let f) = result {
            _ = flush()  // what arrived stays a valid prefix (kept as a partial body to resume from)
            _ = fail(f)
        } else if let unread = window?.unreadBytes, unread > config.memoryBytes, let failure = stopStreaming() {
            // A streamed body's reader is behind as its transfer ends: the rest waits in a file, not in memory
            // nobody counts any more.
            _ = fail(failure)
        } else if let failure = flush() {
            _ = fail(failure)
        } else {
            state = .complete
            pending = []
        }
        beforeWaking()
        wake()
    }

    /// Up to `max` bytes from `offset` (one read of the file, or a copy from memory).
    public func read(at offset: Int, max: Int) -> Step {
        // A reader that caught up gets what waits in the write buffer now, not at the next 128 KiB.
        if offset >= length, !pending.isEmpty, state == .receiving, let failure = flush() { _ = fail(failure) }
        if offset >= length {
            switch state {
            case .receiving: return .wait
            case .complete: return .end
            case .failed: return .failed(failure ?? .internalError("the body failed"))
            }
        }
        if case .failed = state { return .failed(failure ?? .internalError("the body failed")) }
        if discarding { return .failed(.internalError("the body was let go: its one reader was not going to read it")) }
        if let start = window?.start {
            guard offset >= start else {
                return .failed(.internalError("the body streams through memory to one reader: bytes before \(start) are gone"))
            }
            let piece = window!.read(at: offset, max: max)
            roomMade()
            return .bytes(piece)
        }
        guard offset >= fileBase else {
            return .failed(.internalError("the body streamed through memory to one reader: bytes before \(fileBase) are gone"))
        }
        let want = min(max, length - offset)
        guard fd >= 0 else {
            let source = shared ?? memory[...], from = source.startIndex + offset
            return .bytes(Array(source[from..<from + want]))
        }
        guard let out = FileRead.exactly(fd, count: want, at: offset - fileBase) else {
            return .failed(.spoolFailed("the spooled body could not be read back (\(String(cString: strerror(errno))))"))
        }
        return .bytes(out)
    }

    /// Runs `waker` once, when more bytes can be read or the body ended.
    public func whenGrows(_ waker: @escaping () -> Void) {
        guard state == .receiving else { return waker() }
        wakers.append(waker)
    }

    /// Hands the complete spool file over (to the store, which renames it): its path, size and checksum (nil when
    /// the body was not the length announced). The spool keeps its descriptor for the readers still on it.
    public func takeFile() -> (path: String, size: Int, checksum: Int64?)? {
        guard state == .complete, fileBase == 0, let path else { return nil }
        self.path = nil
        let checksum = prefilled > 0 ? nil : sum.flatMap { $0.finish(count: length) }
        return (path, length, checksum)
    }

    // MARK: The file

    private func spill() -> FetchFailure? {
        spill(writing: [memory])
    }

    /// Creates the file with `pieces` (the body from `fileBase`) in it, and empties memory.
    func spill(writing pieces: [[UInt8]]) -> FetchFailure? {
        guard let directory = config.directory else { return .internalError("no spool directory") }
        let name = "\(directory)/body-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let opened = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard opened >= 0 else { return BodySpool.failure("create \(name)") }
        fd = opened
        path = name
        if let failure = roomProblem() { return failure }
        for piece in pieces { if let failure = writeAll(piece) { return failure } }
        length = fileBase + pieces.reduce(0) { $0 + $1.count }
        memory = []
        pending.reserveCapacity(config.writeBytes + 64 * 1024)
        return nil
    }

    private func flush() -> FetchFailure? {
        guard fd >= 0, !pending.isEmpty else { return nil }
        if length / config.checkEvery != (length + pending.count) / config.checkEvery, let failure = roomProblem() {
            return failure
        }
        if let failure = writeAll(pending) { return failure }
        length += pending.count
        pending.removeAll(keepingCapacity: true)
        return nil
    }

    private func writeAll(_ bytes: [UInt8]) -> FetchFailure? {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + off, $0.count - off) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return BodySpool.failure("write \(path ?? "the spool file")") }
            off += n
        }
        return nil
    }

    /// A failure when the spool's file system has less than `keepFree` left.
    private func roomProblem() -> FetchFailure? {
        guard let directory = config.directory else { return nil }
        var fs = statvfs()
        guard statvfs(directory, &fs) == 0 else { return nil }
        let free = Int(fs.f_bavail) * Int(fs.f_frsize)
        guard free < config.keepFree else { return nil }
        return .spoolFailed("ferryd could not keep the body on disk: \(free) bytes are free in \(directory), "
                            + "and it keeps \(config.keepFree) free")
    }

    func fail(_ f: FetchFailure) -> FetchFailure {
        if state == .receiving {
            state = .failed
            failure = f
        }
        pending = []
        memory = []
        window = nil
        return f
    }

    private func wake() {
        wokenAtLength = receivedBytes
        let all = wakers
        wakers.removeAll()
        for waker in all { waker() }
    }

    private static func failure(_ what: String) -> FetchFailure {
        let e = errno
        let why = e == ENOSPC || e == EDQUOT ? "its disk is full" : String(cString: strerror(e))
        return .spoolFailed("ferryd could not keep the body on disk (\(what): \(why))")
    }
}
