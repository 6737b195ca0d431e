#if canImport(Glibc)
import Glibc
#endif
import FerryCache

/// The disk tier: the SQLite index and blob files (`StoreEngine`) worked by one thread (`DiskWorker`) with group
/// commit, and in front of it the write-ahead journal that small sets go to from the loop thread.
///
/// Small unconditional sets are appended to `journal.<n>` in one `write` per loop iteration and settled then, as
/// Redis does with its append-only file; they reach the worker in hand-offs of up to 128 records or 4 MiB, or, while
/// the memory tier holds their values, once, when a job needs the index (`DiskTier+Journal.swift`). Every
/// other job goes to the worker in submission order (journaled sets keep their place in it, so a delete after a set
/// is applied after it) and is answered once its transaction committed. Completions run on the loop thread, through
/// the `post` given at creation. Loop thread only.
///
/// ```swift
/// let disk = try DiskTier(config: StoreConfig(directory: dir), post: mailbox.post)
/// disk.write(key, entry, ifAbsent: false, now: now, settling: disk.settlesAtOnce(key, entry, ifAbsent: false)) { result in … }
/// disk.endOfIteration { flushReplies() }
/// ```
///
/// Confined to the loop thread; `@unchecked Sendable` only so completions posted from the worker can reach it.
final class DiskTier: StoreTier, @unchecked Sendable {
    let config: StoreConfig
    /// Repairs made at start-up (damaged index moved aside, orphans removed), for the log.
    let notices: [String]
    /// What the worker reported last, and the values the memory tier keeps (`JournalKeeping`), counted as the worker
    /// counts its pending sets: as new entries until applied.
    var usage: TierUsage {
        var u = reported
        u.bytes += handOff.keptCost
        u.entries += handOff.keptEntries
        return u
    }
    private var reported = TierUsage()
    /// The last journal write found the disk full: sets go to the worker (which refuses them in full mode) until the
    /// next sweep tries the journal again.
    var journalFull = false
    /// When a sweep last had the pending sets applied (nil: none yet).
    private var lastApplyAt: Int64?
    /// Set by the worker the moment it gives the disk reserve back (`FullModeSignal`).
    let fullMode: FullModeSignal
    /// Where lines for the daemon's log go (entering and leaving full mode).
    var onNotice: (String) -> Void = { _ in }
    private var worker: DiskWorker!
    /// Touched on the loop thread only after the worker stopped (`close`).
    private let engine: StoreEngine
    private let lockFD: Int32
    var completions: [(DiskResult) -> Void] = []
    private var completionsHead = 0
    private static let finished: @Sendable (DiskResult) -> Void = { _ in }
    /// Jobs not yet handed to the worker: handed over once per loop iteration (`endOfIteration`), so one wake-up
    /// and one lock carry everything the iteration produced, and batches (transactions) grow with the load.
    var unsubmitted: [DiskJob] = []
    let journal: JournalWriter
    /// One per record buffered in `journal`: runs once the record is written (or failed).
    var journalAcks: [JournalAck] = []
    /// Sets whose records were written (or failed to be), in order, for `settleJournal`; and the writes they came
    /// from (`writtenSets[previous end ..< end]` had `failure`). Apart, so an ack is moved, never copied: a copy
    /// retains its key's strings and its target (~200 instructions a set, callgrind).
    var writtenSets: [JournalAck] = []
    var writes: [(end: Int, failure: StoreError?)] = []
    /// The store (`CacheStore`), which owns this tier and clears this in its `deinit`: not `weak`, because an object
    /// with a weak reference to it counts every retain and release in a side table, the slow way (perf: 1.5 % of
    /// ferryd's cycles under pipelined sets, in `incrementSlow`).
    unowned(unsafe) var settledSets: SettledSets?

    /// Who hears a journaled set settle: its completion, or for a fast-path set, `settledSets`.
    enum JournalAck {
        case done((Result<Bool, StoreError>) -> Void)
        case fast(SettlingSet)
        /// The place of an ack taken out to be settled (`settleJournal` swaps it out, not copies it).
        case taken
    }
    /// Disk bytes of journaled sets the worker has not counted yet (its totals arrive with each batch).
    var uncountedJournalBytes = 0
    /// What the worker has not been given of the journal yet (see `handOffJournaled`).
    var handOff: JournalHandOff
    /// Records handed to the worker since start (for tests: a key rewritten while kept is handed over once).
    var recordsHandedOver: Int { handOff.recordsHandedOver }
    /// The memory tier, which keeps journaled values itself until they are handed over (`JournalKeeping`): the store
    /// that owns this tier, and clears this in its `deinit` (not `weak`: see `settledSets`).
    unowned(unsafe) var keeper: JournalKeeping?
    /// The records of the last journal write, on their way to `handOff` or the memory tier.
    var writtenRecords: [JournalRecord] = []
    /// Why not more: the worker takes each hand-off in one run on whatever core it gets, and in `make bench` that is
    /// the loop's: 512 records (~0.3 ms of its time) set the set p99 at 50 × 1 (1.05–1.35 ms), 2,048 took it to
    /// 2.6 ms, 128 to 0.8–1.0 ms at the same throughput (more wake-ups, each shorter).
    static let handOffRecords = 128
    /// Values held for the hand-off count too: 512 records of 64 KiB would be 32 MiB kept outside every budget.
    /// At most the engine's apply threshold, so one hand-off never outgrows the room its disk reserve gives.
    let handOffBytes: Int
    /// When the journal file is sealed early, and how far journaled sets may run ahead of the index.
    var room: JournalRoom
    /// Bytes of the journal files sealed since the last one retired with `applyNow`: what the worker may still hold
    /// on disk besides the active file. Over-counts when another job applied them meanwhile, which only applies sooner.
    var sealedBytes = 0
    /// Held in memory by journaled sets as the worker counts it, and the cost of every record handed to it so far.
    private let backlog: JournalBacklog
    var handedOffCost = 0
    /// What the worker holds unapplied, as of its last batch.
    private var workerPendingBytes = 0
    /// Value bytes handed to the disk worker and not yet done are held in the daemon's budget (`.storeQueue`): a
    /// client that sends sets faster than the disk takes them (and cancels or times out) must not grow the daemon.
    private let budget: MemoryBudget

    init(config: StoreConfig, budget: MemoryBudget, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) throws(StoreError) {
        self.config = config
        self.budget = budget
        let opened = try StoreOpening.open(config)
        notices = opened.notices
        lockFD = opened.lockFD
        let engine = opened.engine
        self.engine = engine
        fullMode = engine.reserve.fullMode
        handOffBytes = min(4 * 1024 * 1024, engine.applyThresholdBytes)
        handOff = JournalHandOff(lastWrittenSeq: opened.nextSeq - 1)
        let directory = config.directory
        room = JournalRoom(reserveSize: engine.reserve.size, bufferLimit: budget.limit,
                           free: { DiskReserve.freeBytes(in: directory) })
        backlog = engine.backlog
        do {
            journal = try JournalWriter(directory: config.directory, generation: opened.journalGeneration, nextSeq: opened.nextSeq,
                                        spares: engine.spares)
        } catch {
            Glibc.close(opened.lockFD)
            throw error
        }
        reported.bytes = engine.diskBytes
        reported.entries = engine.diskEntries
        // A reader's last reference may go on any thread: the unpin is locked, the follow-up runs on the loop.
        let relay = TierRelay()
        let pins = engine.pins
        engine.releaseBlob = { hash in
            guard pins.unpin(hash) else { return }
            post { relay.tier?.blobReleased(hash) }
        }
        let box = EngineBox(engine)
        worker = DiskWorker(run: { jobs in box.engine.run(&jobs) }, deliver: { [unowned self] outcome in
            post { self.apply(outcome) }
        })
        relay.tier = self
    }

    func close() {
        // A clean stop leaves no journal (its sets in the index); a killed daemon replays it at start.
        rotateJournal(applyNow: true)
        writtenSets.removeAll()
        writes.removeAll()
        worker.submit(unsubmitted)
        unsubmitted.removeAll()
        worker.stop()
        engine.spares.removeAll()  // spares never outlive the daemon: their room is the disk's again
        engine.retakeReserveForStop()  // the worker is gone: this thread is the engine's only user now
        if lockFD >= 0 { Glibc.close(lockFD) }
    }

    // MARK: StoreTier

    func read(_ key: CacheKey, now: Int64, _ done: @escaping (Result<CacheEntry?, StoreError>) -> Void) {
        // Never a blob without `streamAbove`: every value comes back whole.
        readValue(key, now: now, streamAbove: nil) { result in
            done(result.map { value in if case .entry(let entry)? = value { return entry } else { return nil } })
        }
    }

    func readValue(_ key: CacheKey, now: Int64, streamAbove: Int?, _ done: @escaping (Result<StoredValue?, StoreError>) -> Void) {
        submit(.get(key, now: now, streamAbove: streamAbove)) { result in
            switch result {
            case .entry(let entry): done(.success(entry.map(StoredValue.entry)))
            case .blob(let blob): done(.success(.blob(blob)))
            case .failed(let e): done(.failure(e))
            default: done(.failure(.io("unexpected disk result for get")))
            }
        }
    }

    func reportDamaged(_ blob: StoredBlob) {
        submit(.damagedBlob(blob.key, hash: blob.hash)) { _ in }
    }

    /// The last reader of a pinned blob is done: the worker removes the file if no row points at it any more.
    private func blobReleased(_ hash: String) {
        submit(.releaseBlob(hash: hash)) { _ in }
    }

    /// Small and unconditional, and it fits the disk budget without evicting: the journal path. (Eviction and
    /// `if_absent` need the index, so those sets go to the worker.)
    func settlesAtOnce(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool) -> Bool {
        !ifAbsent && !reported.diskFull && !journalFull && !fullMode.isOn && entry.value.count <= config.inlineThreshold
            && room.admits(unappliedOnDisk: workerPendingBytes + uncountedJournalBytes,
                           heldInMemory: handOff.cost + backlog.held(handedOff: handedOffCost), size: entry.value.count)
            && reported.bytes + uncountedJournalBytes + StoreEngine.cost(key, size: entry.value.count) <= config.diskBudget
    }

    func writeSettling(_ set: consuming SettlingSet, _ entry: CacheEntry, now: Int64) {
        let slot = set.memorySlot
        journaled(set.key, entry, .fast(set), memorySlot: slot)
    }

    /// A set taken through the journal: buffered now, written at the end of the iteration (`settleJournal`).
    private func journaled(_ key: CacheKey, _ entry: CacheEntry, _ ack: consuming JournalAck, memorySlot: SlotHint = .none) {
        uncountedJournalBytes += journal.add(key, entry, memorySlot: memorySlot)
        journalAcks.append(ack)
    }

    func write(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool, now: Int64, settling: Bool,
               _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        if settling { return journaled(key, entry, .done(done)) }
        let size = entry.value.count
        guard budget.reserve(size, for: .storeQueue) else {
            return done(.failure(.busy("""
                \(budget.used(by: .storeQueue)) bytes of values are waiting for the disk and ferryd holds \(budget.used) bytes in \
                transit (its buffer limit is \(budget.limit)); try again
                """)))
        }
        submit(.put(key, entry, ifAbsent: ifAbsent, now: now)) { [unowned self] result in
            budget.release(size, from: .storeQueue)
            switch result {
            case .stored(let stored): done(.success(stored))
            case .failed(let e): done(.failure(e))
            default: done(.failure(.io("unexpected disk result for set")))
            }
        }
    }

    /// About once a second. Applies the journal's pending sets to the index every `applyIntervalMs` (and every
    /// time while the file system is short of room); in between, under `everysec`, has the active journal file
    /// synced instead, so what was acknowledged a second ago is on the disk either way.
    func sweep(now: Int64, accessed: [CacheKey]) {
        journalFull = false
        writeBufferedSets()   // this iteration's sets are in the file before the sync is asked for
        let short = room.look(journalBytes: journal.fileBytes)
        let applyDue = short || lastApplyAt.map { now - $0 >= config.applyIntervalMs || now < $0 } ?? true
        let sync = !applyDue && config.fsync == .everysec && journal.fileBytes > 0 ? journal.path : nil
        submit(.sweep(now: now, accessed: accessed, applyPending: applyDue, syncJournal: sync)) { _ in }
        guard applyDue else { return }
        lastApplyAt = now
        sealedBytes = 0  // the sweep applies what is pending first, and the sealed files go with it
        if journal.fileBytes > 0 { rotateJournal(applyNow: true) }
    }

    /// Writes the journaled sets in one append and settles them, which produces their replies; runs `flushReplies`;
    /// repeats while that produced more journaled sets (a connection resumed by the flush handles its buffered
    /// frames at once), so the loop never sleeps on unsettled sets; then hands the iteration's disk work to the
    /// worker in one batch. Ends because a connection that produces too much pauses again.
    func endOfIteration(flushReplies: () -> Void) {
        repeat {
            settleJournal()
            flushReplies()
        } while journal.hasBuffered || !writtenSets.isEmpty
        settleJournal()
        guard !unsubmitted.isEmpty else { return }
        worker.submit(unsubmitted)
        unsubmitted.removeAll(keepingCapacity: true)
    }

    // MARK: Worker

    /// Queues `job` for the worker (after the journaled sets before it) with the completion that answers it.
    func submit(_ job: DiskJob, _ done: @escaping (DiskResult) -> Void) {
        writeBufferedSets()
        handOffJournaled(kept: job.needsEveryJournaledSet)
        completions.append(done)
        unsubmitted.append(job)
    }

    /// Runs on the loop thread: a batch's results, in submission order.
    private func apply(_ outcome: BatchOutcome) {
        reported.bytes = outcome.diskBytes
        reported.entries = outcome.diskEntries
        reported.evictions += UInt64(outcome.evictions)
        reported.expirations += UInt64(outcome.expirations)
        reported.damaged += UInt64(outcome.damaged)
        // Full mode began: the journal goes to the worker to be retired now, not at the next sweep. Its records are
        // in the index once applied, so on a disk that filled within a second it held every value twice.
        let enteredFullMode = outcome.diskFull && !reported.diskFull
        reported.diskFull = outcome.diskFull
        workerPendingBytes = outcome.pendingBytes
        for notice in outcome.notices { onNotice(notice) }
        for result in outcome.results {
            let done = completions[completionsHead]
            // Released now, not when the array is next compacted: a completion may hold a reply's whole state
            // (a fetch and the file its body streams from).
            completions[completionsHead] = DiskTier.finished
            completionsHead += 1
            done(result)
        }
        if completionsHead > 1024 && completionsHead * 2 > completions.count {
            completions.removeFirst(completionsHead)
            completionsHead = 0
        }
        // (Sealing a file never opened only moves to the next generation; its retirement applies the sealed ones.)
        if enteredFullMode && (journal.fileBytes > 0 || sealedBytes > 0) { rotateJournal(applyNow: true) }
    }
}

/// Lets a blob's release reach the tier that pinned it (weakly: a closed tier ignores it).
private final class TierRelay: @unchecked Sendable {
    weak var tier: DiskTier?
}

/// Hands the engine to the worker thread, which is from then on its only user.
private final class EngineBox: @unchecked Sendable {
    let engine: StoreEngine
    init(_ engine: StoreEngine) { self.engine = engine }
}
