#if canImport(Glibc)
import Glibc
#endif
import FerryCache

/// The disk tier: the SQLite index and blob files (`StoreEngine`) worked by one thread (`DiskWorker`) with group
/// commit, and in front of it the write-ahead journal that small sets go to from the loop thread.
///
/// Small unconditional sets are appended to `journal.<n>` in one `write` per loop iteration and settled then, as
/// Redis does with its append-only file; they reach the worker in hand-offs of up to 512 records or 4 MiB. Every
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
        u.bytes += keptCost
        u.entries += keptEntries
        return u
    }
    private var reported = TierUsage()
    private var keptEntries = 0
    private var keptCost = 0
    /// The last journal write found the disk full: sets go to the worker (which refuses them in full mode) until the
    /// next sweep tries the journal again.
    private var journalFull = false
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
    private var completions: [(DiskResult) -> Void] = []
    private var completionsHead = 0
    private static let finished: @Sendable (DiskResult) -> Void = { _ in }
    /// Jobs not yet handed to the worker: handed over once per loop iteration (`endOfIteration`), so one wake-up
    /// and one lock carry everything the iteration produced, and batches (transactions) grow with the load.
    private var unsubmitted: [DiskJob] = []
    private let journal: JournalWriter
    /// One per record buffered in `journal`: runs once the record is written (or failed).
    private var journalAcks: [JournalAck] = []
    /// Sets whose records were written (or failed to be), in order, for `settleJournal`; and the writes they came
    /// from (`writtenSets[previous end ..< end]` had `failure`). Apart, so an ack is moved, never copied: a copy
    /// retains its key's strings and its target (~200 instructions a set, callgrind).
    private var writtenSets: [JournalAck] = []
    private var writes: [(end: Int, failure: StoreError?)] = []
    weak var settledSets: SettledSets?

    /// Who hears a journaled set settle: its completion, or for a fast-path set, `settledSets`.
    private enum JournalAck {
        case done((Result<Bool, StoreError>) -> Void)
        case fast(SettlingSet)
        /// The place of an ack taken out to be settled (`settleJournal` swaps it out, not copies it).
        case taken
    }
    /// Disk bytes of journaled sets the worker has not counted yet (its totals arrive with each batch).
    private var uncountedJournalBytes = 0
    /// Written journal records the worker has not been given yet (see `handOffJournaled`), and their disk cost.
    private var unhandedRecords: [JournalRecord] = []
    private var unhandedCost = 0
    /// The memory tier, which keeps journaled values itself until they are handed over (`JournalKeeping`).
    weak var keeper: JournalKeeping?
    /// The sequence number of the last record written, and the highest the worker was told it has everything up
    /// to (`DiskJob.journaled`'s `upTo`).
    private var lastWrittenSeq: UInt64
    private var handedUpTo: UInt64
    private var writtenRecords: [JournalRecord] = []
    /// Records handed to the worker since start (for tests: a key rewritten while kept is handed over once).
    private(set) var recordsHandedOver = 0
    /// Why not more: the worker takes each hand-off in one run on whatever core it gets, and in `make bench` that is
    /// the loop's: 512 records (~0.3 ms of its time) set the set p99 at 50 × 1 (1.05–1.35 ms), 2,048 took it to
    /// 2.6 ms, 128 to 0.8–1.0 ms at the same throughput (more wake-ups, each shorter).
    static let handOffRecords = 128
    /// Values held for the hand-off count too: 512 records of 64 KiB would be 32 MiB kept outside every budget.
    /// At most the engine's apply threshold, so one hand-off never outgrows the room its disk reserve gives.
    private let handOffBytes: Int
    /// When the journal file is sealed early, and how far journaled sets may run ahead of the index.
    private var room: JournalRoom
    /// Bytes of the journal files sealed since the last one retired with `applyNow`: what the worker may still hold
    /// on disk besides the active file. Over-counts when another job applied them meanwhile, which only applies sooner.
    private var sealedBytes = 0
    /// Held in memory by journaled sets as the worker counts it, and the cost of every record handed to it so far.
    private let backlog: JournalBacklog
    private var handedOffCost = 0
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
        lastWrittenSeq = opened.nextSeq - 1
        handedUpTo = lastWrittenSeq
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
                           heldInMemory: unhandedCost + backlog.held(handedOff: handedOffCost), size: entry.value.count)
            && reported.bytes + uncountedJournalBytes + StoreEngine.cost(key, size: entry.value.count) <= config.diskBudget
    }

    func writeSettling(_ set: consuming SettlingSet, _ entry: CacheEntry, now: Int64) { journaled(set.key, entry, .fast(set)) }

    /// A set taken through the journal: buffered now, written at the end of the iteration (`settleJournal`).
    private func journaled(_ key: CacheKey, _ entry: CacheEntry, _ ack: consuming JournalAck) {
        journal.add(key, entry)
        journalAcks.append(ack)
        uncountedJournalBytes += StoreEngine.cost(key, size: entry.value.count)
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

    // MARK: Journal

    /// Writes the small sets buffered since the last write in one append and settles every set written since the
    /// last call; hands records to the worker and seals the file when enough gathered.
    private func settleJournal() {
        writeBufferedSets()
        // Taken out whole (a completion may journal more sets, which wait for the next call), and the buffers given
        // back afterwards when nothing was added meanwhile, so they are not allocated again each time.
        var settled: [JournalAck] = [], runs: [(end: Int, failure: StoreError?)] = []
        swap(&settled, &writtenSets)
        swap(&runs, &writes)
        let sets = settledSets
        var i = 0
        for run in runs {
            while i < run.end {
                var ack = JournalAck.taken
                swap(&ack, &settled[i])
                switch consume ack {
                case .done(let done): done(run.failure.map { .failure($0) } ?? .success(true))
                case .fast(let set): sets?.settled(set, failure: run.failure)
                case .taken: break
                }
                i += 1
            }
        }
        settled.removeAll(keepingCapacity: true)
        runs.removeAll(keepingCapacity: true)
        if writtenSets.isEmpty { swap(&settled, &writtenSets) }
        if writes.isEmpty { swap(&runs, &writes) }
        if unhandedRecords.count >= DiskTier.handOffRecords || unhandedCost >= handOffBytes { handOffJournaled(kept: false) }
        // Kept values go over in bounded batches too (many distinct keys): the pending sets a hand-off adds must fit
        // the room a full disk's reserve gives their apply, as `handOffBytes` makes sure for the others.
        if keptCost >= handOffBytes { handOffJournaled(kept: true) }
        if journal.fileBytes >= JournalRoom.rotateBytes {
            rotateJournal(applyNow: room.appliesSealed(sealedBytes + journal.fileBytes))
        } else if journal.fileBytes >= room.nextLookAt && room.look(journalBytes: journal.fileBytes) {
            rotateJournal(applyNow: true)  // short of room: every sealed file applied and gone at once
        }
    }

    /// The write itself. Also runs before any job is queued for the worker, so journaled sets keep their place in
    /// the order of disk work (a delete after a set is applied after it). A written record whose entry the memory
    /// tier still holds stays there, kept (`JournalKeeping.keep`); the others wait for the next hand-off.
    private func writeBufferedSets() {
        guard journal.hasBuffered else { return }
        let cost = journal.buffered.reduce(0) { $0 + $1.cost }
        var failure: StoreError?
        do throws(StoreError) {
            // Full mode began since these were taken: the room the reserve freed is for deletes and applies.
            if fullMode.isOn {
                journal.discardBuffered()
                throw StoreError.diskFull("the cache disk is full: new values are refused until there is room")
            }
            try journal.write(sync: config.fsync == .always, into: &writtenRecords)
            for record in writtenRecords {
                switch keeper?.keep(record) ?? .handOver {
                case .handOver: handOver(record)
                case .kept: kept(record, +1)
                // The earlier record had the same entry, so the same cost: counted once, as kept.
                case .keptInPlaceOfTheSame: uncountedJournalBytes -= record.cost
                }
            }
            lastWrittenSeq = writtenRecords.last?.seq ?? lastWrittenSeq
            writtenRecords.removeAll(keepingCapacity: true)
            // Superseded by the records just written: never handed over, no longer the disk's to count.
            for old in keeper?.takeDisplaced() ?? [] {
                kept(old, -1)
                uncountedJournalBytes -= old.cost
            }
        } catch {
            if case .diskFull = error { journalFull = true }
            uncountedJournalBytes -= cost
            failure = error
            // The sets that replaced them were not written: the values before them still stand.
            for old in keeper?.takeDisplaced() ?? [] {
                kept(old, -1)
                handOver(old)
            }
        }
        if writtenSets.isEmpty {
            swap(&writtenSets, &journalAcks)
        } else {
            writtenSets.append(contentsOf: journalAcks)
            journalAcks.removeAll(keepingCapacity: true)
        }
        writes.append((writtenSets.count, failure))
    }

    /// A written record for the next hand-off.
    private func handOver(_ record: JournalRecord) {
        unhandedCost += record.cost
        unhandedRecords.append(record)
    }

    /// A kept value left the memory tier (`JournalKeeping`): handed over with the next hand-off, before any job
    /// queued after now.
    func takeLeft(_ record: JournalRecord) {
        kept(record, -1)
        handOver(record)
    }

    /// A record the memory tier keeps (`+1`) or no longer does (`-1`), for `usage`.
    private func kept(_ record: JournalRecord, _ sign: Int) {
        keptEntries += sign
        keptCost += sign * record.cost
    }

    /// Gives the worker the journaled sets it does not have yet, as one job in the current place of the job order,
    /// with the sequence number below which it has every set (`upTo`: below the oldest value the memory tier still
    /// keeps). With `kept`, the kept values too, so that the worker then has every journaled set. Done before any
    /// other job is queued (with `kept` for those that need the index current), at every sweep, and once enough
    /// gathered: not every iteration, because waking the worker costs two context switches, more than a whole set.
    private func handOffJournaled(kept: Bool) {
        if kept, let keeper {
            for record in keeper.takeKept() {
                self.kept(record, -1)
                handOver(record)
            }
        }
        let upTo = max(handedUpTo, keeper?.oldestKeptSeq.map { $0 - 1 } ?? lastWrittenSeq)
        guard !unhandedRecords.isEmpty || upTo > handedUpTo else { return }
        handedUpTo = upTo
        recordsHandedOver += unhandedRecords.count
        let cost = unhandedCost
        handedOffCost += cost
        completions.append { [unowned self] _ in uncountedJournalBytes -= cost }  // the worker counts them now
        unsubmitted.append(.journaled(unhandedRecords, upTo: upTo))
        unhandedRecords.removeAll(keepingCapacity: true)
        unhandedCost = 0
    }

    /// Seals the active journal file (the next write starts a new one) and has the worker delete it once its records
    /// are in the index: applied at once with `applyNow`, else at the next apply (see `JournalRoom.appliesSealed`).
    private func rotateJournal(applyNow: Bool) {
        writeBufferedSets()
        sealedBytes = applyNow ? 0 : sealedBytes + journal.fileBytes
        submit(.retireJournal(path: journal.seal(), applyNow: applyNow)) { _ in }
        room.rotated()
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
