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
/// Memory hits are answered synchronously on the loop thread, with no thread hop, and so are small sets: their
/// records go to the journal in one `write` per loop iteration (`writeJournal`), after which they are acknowledged.
/// Everything else goes to the disk worker in submission order (journaled sets take their place in that order, so
/// a delete after a set stays after it); those writes are acknowledged once their transaction committed. Nothing
/// acknowledged is lost when the process is killed. Completions always run on the loop thread, through the `post`
/// function given at creation.
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
    /// Jobs not yet handed to the worker: handed over once per loop iteration (`endOfIteration`), so one wake-up
    /// and one lock carry everything the iteration produced, and batches (transactions) grow with the load.
    private var unsubmitted: [DiskJob] = []
    private var completionsHead = 0
    /// Keys read from the disk tier since the last sweep (memory hits are marked in `memory`).
    private var accessed = Set<CacheKey>()
    /// Keeps late completions from putting old values into the memory tier.
    private var mutations = MutationTracker()
    private let journal: JournalWriter
    /// One per record buffered in `journal`: runs once the record is written (or failed).
    private var journalAcks: [(done: (Result<Bool, StoreError>) -> Void, key: CacheKey, ticket: MutationTracker.Ticket)] = []
    /// Sets whose records were written (or failed to be), waiting to be acknowledged by `writeJournal`.
    private var writtenSets: [(done: (Result<Bool, StoreError>) -> Void, failure: StoreError?, key: CacheKey,
                               ticket: MutationTracker.Ticket)] = []
    /// Disk-tier bytes of journaled sets the worker has not counted yet (its totals arrive with each batch).
    private var uncountedJournalBytes = 0
    /// Written journal records the worker has not been given yet (see `handOffJournaled`), and their disk cost.
    private var unhandedRecords: [JournalRecord] = []
    private var unhandedCost = 0
    static let handOffRecords = 512
    /// Values held for the hand-off count too: 512 records of 64 KiB would be 32 MiB kept outside every budget.
    static let handOffBytes = 4 * 1024 * 1024
    /// The active journal file is sealed and a new one started at this size, and at every sweep.
    static let journalRotateBytes = 32 * 1024 * 1024
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
        do {
            journal = try JournalWriter(directory: config.directory, generation: opened.journalGeneration, nextSeq: opened.nextSeq)
        } catch {
            Glibc.close(opened.lockFD)
            throw error
        }
        counters.diskBytes = engine.diskBytes
        counters.diskEntries = engine.diskEntries
        let box = EngineBox(engine)
        worker = DiskWorker(run: { jobs in box.engine.run(jobs) }, deliver: { [unowned self] outcome in
            post { self.apply(outcome) }
        })
    }

    /// Waits for queued disk work to commit, then stops the worker. Completions of that work are not run.
    public func close() {
        // A clean stop leaves no journal (its sets in the index); a killed daemon replays it at start.
        rotateJournal()
        writtenSets.removeAll()
        worker.submit(unsubmitted)
        unsubmitted.removeAll()
        worker.stop()
        if lockFD >= 0 { Glibc.close(lockFD) }
    }

    // MARK: Operations

    public func get(_ key: CacheKey, now: Int64, _ done: @escaping (Result<(CacheEntry, CacheSource)?, StoreError>) -> Void) {
        if let entry = memory.get(key, markAccess: true) {
            if !entry.isExpired(now: now) {
                counters.memoryHits += 1
                return done(.success((entry, .memory)))
            }
            dropFromMemory(key)
            counters.expirations += 1
        }
        let ticket = mutations.begin(key, mutates: false)
        submit(.get(key, now: now)) { [unowned self] result in
            let current = mutations.end(key, ticket)
            switch result {
            case .entry(let entry?):
                counters.diskHits += 1
                accessed.insert(key)
                if current { remember(key, entry) }
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
        let entry = CacheEntry(value: value, createdAt: now, expiresAt: ttlMs.map { now + $0 })
        let cost = StoreEngine.cost(key, size: value.count)
        // Small and unconditional, and it fits the disk budget without evicting: the journal path. (Eviction and
        // `if_absent` need the index, so those sets go to the worker.)
        if !ifAbsent && value.count <= config.inlineThreshold
            && counters.diskBytes + uncountedJournalBytes + cost <= config.diskBudget {
            // Visible at once, as in Redis: a get later in this iteration (a pipelined set then get) sees the new
            // value. Acknowledged at the end of the iteration, once the record is written; if that write fails, the
            // value leaves the memory tier again (unless something newer replaced it meanwhile).
            journal.add(key, entry)
            journalAcks.append((done, key, mutations.beginShort(key)))
            remember(key, entry)
            uncountedJournalBytes += cost
            return
        }
        guard queuedValueBytes + value.count <= CacheStore.maxQueuedValueBytes else {
            return done(.failure(.diskFull("\(queuedValueBytes) bytes of values are waiting for the disk; try again")))
        }
        queuedValueBytes += value.count
        let ticket = mutations.begin(key, mutates: true)
        submit(.put(key, entry, ifAbsent: ifAbsent, now: now)) { [unowned self] result in
            queuedValueBytes -= value.count
            let current = mutations.end(key, ticket)
            switch result {
            case .stored(let stored):
                if stored {
                    counters.sets += 1
                    if current { remember(key, entry) }
                }
                done(.success(stored))
            case .failed(let e): done(.failure(e))
            default: done(.failure(.io("unexpected disk result for set")))
            }
        }
    }

    public func delete(_ key: CacheKey, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        // Gone from memory at once: a get arriving before the worker ran the delete must not find the old value.
        let liveInMemory = memory.peek(key).map { !$0.isExpired(now: now) } ?? false
        dropFromMemory(key)
        let ticket = mutations.begin(key, mutates: true)
        submit(.delete(key, now: now)) { [unowned self] result in
            _ = mutations.end(key, ticket)
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
        let ticket = mutations.begin(key, mutates: true)
        submit(.touch(key, expiresAt: expiresAt, now: now)) { [unowned self] result in
            let current = mutations.end(key, ticket)
            switch result {
            case .touched(true):
                if current { memory.update(key) { $0.expiresAt = expiresAt } }
                done(.success(.some(expiresAt)))
            case .touched(false):
                if current { dropFromMemory(key) }
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
        _ = memory.removeAll(visiting: Int.max) { key, _ in key.namespace == namespace }
        mutations.cleared(namespace)
        syncMemoryCounters()
        submit(.clear(namespace: namespace, now: now)) { result in
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
        // Memory hits were marked in the memory tier (cheaper than a set insert per hit); disk hits are here.
        let touched = Array(accessed) + memory.takeAccessed()
        accessed.removeAll(keepingCapacity: true)
        submit(.sweep(now: now, accessed: touched)) { _ in }
        if journal.fileBytes > 0 { rotateJournal() }
    }

    // MARK: Journal

    /// Whether journaled sets wait for `writeJournal` (to be written, or to be acknowledged).
    private var hasJournalWork: Bool { journal.hasBuffered || !writtenSets.isEmpty }

    /// Writes the small sets buffered since the last write in one append and acknowledges every set written since
    /// the last call (or fails them), at the end of each loop iteration (`endOfIteration`), before replies are
    /// flushed.
    private func writeJournal() {
        writeBufferedSets()
        let settled = writtenSets
        writtenSets.removeAll(keepingCapacity: true)
        for set in settled {
            let current = mutations.end(set.key, set.ticket)
            if let failure = set.failure {
                if current { dropFromMemory(set.key) }
                set.done(.failure(failure))
            } else {
                counters.sets += 1
                set.done(.success(true))
            }
        }
        if unhandedRecords.count >= CacheStore.handOffRecords || unhandedCost >= CacheStore.handOffBytes { handOffJournaled() }
        if journal.fileBytes >= CacheStore.journalRotateBytes { rotateJournal() }
    }

    /// The write itself. Also runs before any job is queued for the worker, so journaled sets keep their place in
    /// the order of disk work (a delete after a set is applied after it).
    private func writeBufferedSets() {
        guard journal.hasBuffered else { return }
        let acks = journalAcks
        journalAcks.removeAll(keepingCapacity: true)
        let cost = journal.buffered.reduce(0) { $0 + $1.cost }
        do {
            let records = try journal.write()
            unhandedRecords += records
            unhandedCost += cost
            for ack in acks { writtenSets.append((ack.done, nil, ack.key, ack.ticket)) }
        } catch {
            uncountedJournalBytes -= cost
            for ack in acks { writtenSets.append((ack.done, error, ack.key, ack.ticket)) }
        }
    }

    /// Gives the worker the journaled sets it does not have yet, as one job in the current place of the job order.
    /// Done before any other job is queued (so it sees them), at every sweep, and once enough gathered: not every
    /// iteration, because waking the worker costs two context switches, more than a whole set.
    private func handOffJournaled() {
        guard !unhandedRecords.isEmpty else { return }
        let cost = unhandedCost
        completions.append { [unowned self] _ in uncountedJournalBytes -= cost }  // the worker counts them now
        unsubmitted.append(.journaled(unhandedRecords))
        unhandedRecords.removeAll(keepingCapacity: true)
        unhandedCost = 0
    }

    /// Seals the active journal file (the next write starts a new one) and has the worker apply and delete it.
    private func rotateJournal() {
        writeBufferedSets()
        submit(.retireJournal(path: journal.seal())) { _ in }
    }

    // MARK: Internals

    private func submit(_ job: DiskJob, _ done: @escaping (DiskResult) -> Void) {
        writeBufferedSets()
        handOffJournaled()
        completions.append(done)
        unsubmitted.append(job)
    }

    /// Once per loop iteration, before the loop sleeps (the daemon's iteration hook; a test's loop after each pass):
    /// writes the journaled sets in one append and acknowledges them, which produces their replies; runs
    /// `flushReplies`; repeats while that produced more journaled sets (a connection resumed by the flush handles
    /// its buffered frames at once), so the loop never sleeps on unacknowledged sets; then hands the iteration's
    /// disk work to the worker in one batch. Ends because a connection that produces too much pauses again.
    ///
    /// ```swift
    /// let hook = LoopIterationHook(loop: loop) { store.endOfIteration { flushConnections() } }
    /// ```
    public func endOfIteration(flushReplies: () -> Void) {
        repeat {
            writeJournal()
            flushReplies()
        } while hasJournalWork
        flushSubmissions()
    }

    /// Hands the jobs queued since the last call to the disk worker.
    private func flushSubmissions() {
        writeJournal()
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
