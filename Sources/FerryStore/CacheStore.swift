#if canImport(Glibc)
import Glibc
#endif
import FerryCache

/// Where a value came from.
public enum CacheSource: String, Sendable {
    case memory, disk
}

/// The project's storage layer, as the loop thread uses it: a memory tier (exact byte budget, LRU) in front of the
/// disk tier (SQLite index + blob files, worked by one thread with group commit).
///
/// Memory hits are answered synchronously on the loop thread, with no thread hop. Everything else goes to the disk
/// worker in submission order; a write is acknowledged (its completion runs) only once it is on disk — a small set
/// in the journal, anything else in a committed transaction — so nothing acknowledged is lost when the process is
/// killed. Completions always run on the loop thread, through
/// the `post` function given at creation.
///
/// ```swift
/// let store = try CacheStore(config: StoreConfig(directory: dir), post: mailbox.post)
/// store.set(key, value: bytes, ttlMs: 30_000, ifAbsent: false, now: nowMs) { result in ... }
/// store.get(key, now: nowMs) { result in ... }
/// ```
///
/// Confined to the loop thread; `@unchecked Sendable` only so completions posted from the worker can reach it.
public final class CacheStore: @unchecked Sendable {
    public let config: StoreConfig
    public private(set) var counters = StoreCounters()
    /// Repairs made at start-up (damaged index moved aside, orphans removed), for the log.
    public let notices: [String]
    private let memory: MemoryLRU<CacheKey, CacheEntry>
    private var worker: DiskWorker!
    private let lockFD: Int32
    private var completions: [(DiskResult) -> Void] = []
    /// Jobs not yet handed to the worker: handed over once per loop iteration (`flushSubmissions`), so one wake-up
    /// and one lock carry everything the iteration produced, and batches (transactions) grow with the load.
    private var unsubmitted: [DiskJob] = []
    /// When true, `flushSubmissions` must be called (the daemon does it at the end of each loop iteration); when
    /// false, every job goes to the worker at once (tests drive the store without a loop).
    public var batchesSubmissions = false
    private var completionsHead = 0
    private var accessed = Set<CacheKey>()
    /// Value bytes handed to the disk worker and not yet done: a client that sends sets faster than the disk takes
    /// them (and cancels or times out) must not grow the daemon without bound.
    private var queuedValueBytes = 0
    public static let maxQueuedValueBytes = 256 * 1024 * 1024

    public init(config: StoreConfig, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) throws(StoreError) {
        self.config = config
        memory = MemoryLRU(budget: config.memoryBudget)
        let opened = try StoreOpening.open(config)
        notices = opened.notices
        lockFD = opened.lockFD
        let engine = opened.engine
        counters.diskBytes = engine.diskBytes
        counters.diskEntries = engine.diskEntries
        let box = EngineBox(engine)
        worker = DiskWorker(run: { jobs in box.engine.run(jobs) }, deliver: { [unowned self] outcome in
            post { self.apply(outcome) }
        })
    }

    /// Waits for queued disk work to commit, then stops the worker. Completions of that work are not run.
    public func close() {
        // A clean stop leaves the journal empty (its sets in the index); a killed daemon replays it at start.
        submit(.applyJournal) { _ in }
        flushSubmissions()
        worker.stop()
        if lockFD >= 0 { Glibc.close(lockFD) }
    }

    // MARK: Operations

    public func get(_ key: CacheKey, now: Int64, _ done: @escaping (Result<(CacheEntry, CacheSource)?, StoreError>) -> Void) {
        if let entry = memory.get(key) {
            if !entry.isExpired(now: now) {
                counters.memoryHits += 1
                accessed.insert(key)
                return done(.success((entry, .memory)))
            }
            dropFromMemory(key)
            counters.expirations += 1
        }
        submit(.get(key, now: now)) { [unowned self] result in
            switch result {
            case .entry(let entry?):
                counters.diskHits += 1
                accessed.insert(key)
                remember(key, entry)
                done(.success((entry, .disk)))
            case .entry(nil):
                counters.misses += 1
                done(.success(nil))
            case .failed(let e): done(.failure(e))
            default: done(.failure(.io("unexpected disk result for get")))
            }
        }
    }

    /// Stores a value; `done(false)` when `ifAbsent` and a live entry exists.
    public func set(_ key: CacheKey, value: [UInt8], ttlMs: Int64?, ifAbsent: Bool, now: Int64,
                    _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        guard value.count <= config.maxValueBytes else {
            return done(.failure(.valueTooLarge(size: value.count, limit: config.maxValueBytes)))
        }
        if ifAbsent, let existing = memory.peek(key), !existing.isExpired(now: now) { return done(.success(false)) }
        guard queuedValueBytes + value.count <= CacheStore.maxQueuedValueBytes else {
            return done(.failure(.diskFull("\(queuedValueBytes) bytes of values are waiting for the disk; try again")))
        }
        queuedValueBytes += value.count
        let entry = CacheEntry(value: value, createdAt: now, expiresAt: ttlMs.map { now + $0 })
        submit(.put(key, entry, ifAbsent: ifAbsent, now: now)) { [unowned self] result in
            queuedValueBytes -= value.count
            switch result {
            case .stored(let stored):
                if stored {
                    counters.sets += 1
                    remember(key, entry)
                }
                done(.success(stored))
            case .failed(let e): done(.failure(e))
            default: done(.failure(.io("unexpected disk result for set")))
            }
        }
    }

    public func delete(_ key: CacheKey, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        submit(.delete(key, now: now)) { [unowned self] result in
            let liveInMemory = memory.peek(key).map { !$0.isExpired(now: now) } ?? false
            dropFromMemory(key)
            switch result {
            case .deleted(let existed): done(.success(existed || liveInMemory))
            case .failed(let e): done(.failure(e))
            default: done(.failure(.io("unexpected disk result for delete")))
            }
        }
    }

    /// Sets a new expiry (`nil`: never); `done(nil)` when there is no live entry.
    public func touch(_ key: CacheKey, ttlMs: Int64?, now: Int64, _ done: @escaping (Result<Int64??, StoreError>) -> Void) {
        let expiresAt = ttlMs.map { now + $0 }
        submit(.touch(key, expiresAt: expiresAt, now: now)) { [unowned self] result in
            switch result {
            case .touched(true):
                memory.update(key) { $0.expiresAt = expiresAt }
                done(.success(.some(expiresAt)))
            case .touched(false):
                dropFromMemory(key)
                done(.success(.none))
            case .failed(let e): done(.failure(e))
            default: done(.failure(.io("unexpected disk result for touch")))
            }
        }
    }

    public func list(namespace: String, prefix: String, cursor: String?, limit: Int, now: Int64,
                     _ done: @escaping (Result<(keys: [ListedKey], more: Bool), StoreError>) -> Void) {
        submit(.list(namespace: namespace, prefix: prefix, cursor: cursor, limit: limit, now: now)) { result in
            switch result {
            case .listed(let keys, let more): done(.success((keys, more)))
            case .failed(let e): done(.failure(e))
            default: done(.failure(.io("unexpected disk result for list")))
            }
        }
    }

    public func clear(namespace: String, now: Int64, _ done: @escaping (Result<Int, StoreError>) -> Void) {
        submit(.clear(namespace: namespace, now: now)) { [unowned self] result in
            _ = memory.removeAll(visiting: Int.max) { key, _ in key.namespace == namespace }
            syncMemoryCounters()
            switch result {
            case .cleared(let n): done(.success(n))
            case .failed(let e): done(.failure(e))
            default: done(.failure(.io("unexpected disk result for clear")))
            }
        }
    }

    /// Drops expired entries (memory now, disk through the worker) and records memory hits in the disk tier's LRU
    /// order. Called from a loop timer, about once a second.
    public func sweep(now: Int64) {
        let expired = memory.removeAll(visiting: 2000) { _, entry in entry.isExpired(now: now) }
        counters.expirations += UInt64(expired.count)
        syncMemoryCounters()
        let touched = Array(accessed)
        accessed.removeAll(keepingCapacity: true)
        submit(.sweep(now: now, accessed: touched)) { _ in }
    }

    // MARK: Internals

    private func submit(_ job: DiskJob, _ done: @escaping (DiskResult) -> Void) {
        completions.append(done)
        unsubmitted.append(job)
        if !batchesSubmissions { flushSubmissions() }
    }

    /// Hands the jobs queued since the last call to the disk worker.
    public func flushSubmissions() {
        guard !unsubmitted.isEmpty else { return }
        worker.submit(unsubmitted)
        unsubmitted.removeAll(keepingCapacity: true)
    }

    /// Runs on the loop thread: a batch's results, in submission order.
    private func apply(_ outcome: BatchOutcome) {
        counters.diskBytes = outcome.diskBytes
        counters.diskEntries = outcome.diskEntries
        counters.diskEvictions += UInt64(outcome.evictions)
        counters.expirations += UInt64(outcome.expirations)
        for result in outcome.results {
            let done = completions[completionsHead]
            completionsHead += 1
            done(result)
        }
        if completionsHead > 1024 && completionsHead * 2 > completions.count {
            completions.removeFirst(completionsHead)
            completionsHead = 0
        }
    }

    private func remember(_ key: CacheKey, _ entry: CacheEntry) {
        let evicted = memory.set(key, entry, cost: entry.value.count + key.overheadBytes)
        counters.memoryEvictions += UInt64(evicted.filter { $0.key != key }.count)
        syncMemoryCounters()
    }

    @discardableResult
    private func dropFromMemory(_ key: CacheKey) -> Bool {
        let removed = memory.remove(key) != nil
        syncMemoryCounters()
        return removed
    }

    private func syncMemoryCounters() {
        counters.memoryBytes = memory.usedBytes
        counters.memoryEntries = memory.count
    }
}

/// Hands the engine to the worker thread, which is from then on its only user.
private final class EngineBox: @unchecked Sendable {
    let engine: StoreEngine
    init(_ engine: StoreEngine) { self.engine = engine }
}
