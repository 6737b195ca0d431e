#if canImport(Glibc)
import Glibc
#endif
import FerryBytes
import FerryCache

/// Runs batches of disk jobs on the worker thread: the sets of a batch in one SQLite transaction
/// (`StoreEngine+GroupCommit`), other jobs in one each (`StoreEngine+Transactions`), journaled sets gathered in
/// `pending` and applied in large transactions; blob files written before the transaction (so a row never points at a
/// missing file) and deleted after it commits (so a crash leaves at worst an orphan file, which start-up removes).
final class StoreEngine {
    let config: StoreConfig
    let index: DiskIndex
    let blobs: BlobFiles
    var diskBytes: Int
    var diskEntries: Int
    var maybeUnreferenced: [String] = []
    /// Blob files renamed into place by `adopt` in the running transaction: removed again if it rolls back.
    var adoptedInTransaction: [String] = []
    /// Blob files replies are still reading: never removed while pinned (`releaseBlob` removes them after).
    let pins = BlobPins()
    /// Set once by the disk tier before the worker starts: what a `StoredBlob` calls when its reader is done.
    var releaseBlob: @Sendable (String) -> Void = { _ in }
    /// Small sets acknowledged through the journal and not yet in the index: the latest value per key. Reads look
    /// here first; every other kind of job applies them to the index before it runs, so the index is current
    /// whenever anything but a small set or a get touches it.
    private(set) var pending: [PendingKey: CacheEntry] = [:]
    /// The sequence number below which every journaled set was handed over (`DiskJob.journaled`'s `upTo`; the
    /// memory tier may keep newer ones, and a record above it may already be here); `applied_seq` in the index once
    /// `pending` is applied.
    private var pendingSeq: UInt64 = 0
    /// Journal files sealed by the loop, deleted once everything pending is in the index.
    /// Sealed journal files, each with the highest sequence number it can hold (every record of a file was
    /// accepted before the job that retires it): a file goes once the index holds everything up to that number.
    private var sealedJournals: [(path: String, lastSeq: UInt64)] = []
    /// The highest sequence number in the index.
    private var appliedSeq: UInt64 = 0
    /// Value bytes held in `pending` (memory the daemon keeps until the apply).
    private var pendingBytes = 0
    /// Pending sets are applied once this many, or this many value bytes, have gathered (and by a sweep every
    /// `StoreConfig.applyIntervalMs`), which bounds both the journal file and the memory `pending` holds.
    static let applyThreshold = 20_000
    /// Small: these values are held twice while the memory tier keeps them too, and apart from it once evicted.
    static let maxApplyThresholdBytes = 8 * 1024 * 1024

    /// Where retired journal files go to be written over again.
    let spares: JournalSpares
    /// What the journal's sets hold in memory, for the loop's bound (`JournalBacklog`).
    let backlog = JournalBacklog()
    /// Room kept so that a full disk can still be emptied (`DiskReserve`); not held = full mode.
    var reserve: DiskReserve
    /// Pending sets are applied at this many value bytes: at most a quarter of the reserve (applying them takes about
    /// twice their size, in the WAL and then the database), so that giving the reserve back
    /// always leaves room to apply them (and to run the deletes queued behind them).
    let applyThresholdBytes: Int

    init(config: StoreConfig, index: DiskIndex, blobs: BlobFiles, reserve: DiskReserve) throws(SQLiteError) {
        self.config = config
        self.index = index
        self.blobs = blobs
        self.reserve = reserve
        spares = JournalSpares(directory: config.directory)
        applyThresholdBytes = min(StoreEngine.maxApplyThresholdBytes, reserve.size / 4)
        // The WAL folds back into the database every quarter reserve (at most SQLite's default 1000 pages): on a
        // full disk it must never hold more than the reserve can give, or folding it back would need room itself.
        try index.db.exec("PRAGMA wal_autocheckpoint=\(max(16, min(1000, reserve.size / 4 / 4096)));")
        // And the WAL's file is cut back to a quarter reserve whenever a checkpoint lets it start over: a large apply
        // leaves it at its high-water mark (1 MiB on the 8 MiB disk of FullDiskTests), room a touch or a delete on a
        // full disk then lacks (the WAL is rewritten from its start, so a small file is enough).
        try index.db.exec("PRAGMA journal_size_limit=\(max(65536, reserve.size / 4));")
        let totals = try index.totals(overheadPerRow: StoreConfig.diskOverheadPerEntry)
        diskBytes = totals.bytes
        diskEntries = totals.rows
    }

    static func cost(_ key: CacheKey, size: Int) -> Int {
        size + key.key.utf8.count + key.namespace.utf8.count + StoreConfig.diskOverheadPerEntry
    }

    /// Runs a batch; each job is taken out of `jobs` before it runs, so a hand-off's records (and their values) are
    /// freed once accepted, not when the whole batch — perhaps a long apply — is over.
    func run(_ jobs: inout [DiskJob]) -> BatchOutcome {
        var outcome = BatchOutcome(results: [DiskResult](repeating: .swept, count: jobs.count), diskBytes: 0, diskEntries: 0,
                                   evictions: 0, expirations: 0)
        var i = 0
        while i < jobs.count {
            let puts = StoreEngine.putsStarting(at: i, in: jobs)
            if puts > 1 && reserve.isHeld {
                runPuts(i..<i + puts, &jobs, &outcome)
                i += puts
                continue
            }
            var job = DiskJob.journaled([], upTo: 0)
            swap(&job, &jobs[i])
            if case .retireJournal(let path, _) = job { sealedJournals.append((path, pendingSeq)) }
            var result = runOne(job, &outcome)
            // The file system is full: give back the reserve, whose room lets this job (and the deletes that
            // free space) commit, and refuse new values from now on (full mode).
            if case .failed(.diskFull(let why)) = result, enterFullMode(why, &outcome) { result = runOne(job, &outcome) }
            outcome.results[i] = result
            i += 1
        }
        if pending.count >= StoreEngine.applyThreshold || pendingBytes >= applyThresholdBytes {
            // Applied while it still fits the reserve: pending sets must never outgrow the room a full disk has.
            do throws(StoreError) { try applyPending() } catch .diskFull(let why) {
                if enterFullMode(why, &outcome) { try? applyPending() }
            } catch {}
        }
        outcome.diskBytes = diskBytes
        outcome.diskEntries = diskEntries
        outcome.diskFull = !reserve.isHeld
        outcome.pendingBytes = pendingBytes
        return outcome
    }

    /// At a clean stop (the worker stopped): the reserve is taken back if it fits, else as much of it as fits (at
    /// least 64 KiB), so that the next start on a disk something else filled meanwhile still has room to open in.
    func retakeReserveForStop() { reserve.holdAtStop() }

    /// Gives the reserve back (false when it already was): from now on new values are refused.
    func enterFullMode(_ why: String, _ outcome: inout BatchOutcome) -> Bool {
        guard reserve.giveBack() else { return false }
        outcome.notices.append("CACHE DISK FULL (\(why)): gave back the \(reserve.size)-byte reserve; "
                               + "new values are refused until there is room, reads and deletes go on")
        return true
    }

    /// Why a value is refused in full mode.
    private var fullModeRefusal: StoreError {
        .diskFull("the cache's file system has \(reserve.freeBytes()) bytes free; new values are refused until there is room (deletes, clears and reads work)")
    }

    func runOne(_ job: DiskJob, _ outcome: inout BatchOutcome) -> DiskResult {
        switch job {
        case .journaled(let records, let upTo):
            accept(records, upTo: upTo)
            return .swept
        case .get(let key, let now, _):
            if let entry = pending[PendingKey(key)] { return .entry(entry.isExpired(now: now) ? nil : entry) }
            defer { index.resetStatements() }
            return perform(job, &outcome)  // a read: no transaction needed
        case .releaseBlob, .damagedBlob:
            defer { index.resetStatements() }
            return perform(job, &outcome)  // no transaction: a file removed, a damaged row dropped
        case .retireJournal(let path, let applyNow):
            guard applyNow || pending.isEmpty else {
                // It waits for the next apply: under `everysec` its records reach the disk now, as the active
                // file's do at each sweep, not only when the index has them.
                if config.fsync == .everysec { Journal.sync(path) }
                return .swept
            }
            if let failure = applyPendingOrEnterFullMode(&outcome) { return .failed(failure) }
            return .swept
        case .sweep(let now, _, applyPending: false, let syncJournal) where sweepsBesidePending(now: now, syncJournal):
            return runTransaction([job], &outcome)[0]
        case .put where !reserve.isHeld, .adopt where !reserve.isHeld:
            if case .adopt(_, let file) = job { unlink(file.path) }
            return .failed(fullModeRefusal)
        case .adopt(let key, var file) where file.checksum == nil:
            // Read once to make its checksum, before the transaction: the index is not held meanwhile.
            guard let sum = BlobFiles.checksum(ofFileAt: file.path, size: file.size) else {
                unlink(file.path)
                return .failed(.io("\(file.path) is not the \(file.size) bytes it was said to be"))
            }
            file.checksum = sum
            return runOne(.adopt(key, file), &outcome)
        default:
            if let failure = applyPendingOrEnterFullMode(&outcome) {
                // Too full even for the reserve's room: a listing still answers, from the index and the pending sets.
                if case .list(let namespace, let prefix, let cursor, let limit, let now) = job, case .diskFull = failure {
                    return listWithPending(namespace: namespace, prefix: prefix, cursor: cursor, limit: limit, now: now)
                }
                return .failed(failure)
            }
            let result = runTransaction([job], &outcome)[0]
            if case .failed(.diskFull(let why)) = result, enterFullMode(why, &outcome) {
                // The disk filled before the store knew: in full mode now, a new value is refused and a delete,
                // touch or clear runs again in the reserve's room (which is what the reserve is for).
                return runOne(job, &outcome)
            }
            // In full mode every write folds the WAL back at once: otherwise each delete's frames would take the
            // room the reserve gave before the next sweep, and deletes would stop freeing space.
            if !reserve.isHeld {
                index.releaseFreePages()  // what deletes freed goes back to the file system
                index.checkpoint()
            }
            if case .sweep = job, !reserve.isHeld, reserve.retakeIfRoom() {
                outcome.notices.append("cache disk has room again: reserve of \(reserve.size) bytes taken back, values accepted")
            }
            return result
        }
    }

    /// Takes journaled sets into `pending`.
    ///
    /// Accounting without an index lookup (that lookup was the costliest part of a set): a journaled set is counted
    /// as a new entry, which can only over-count — the budget check stays safe — and `applyPending` subtracts the
    /// rows it replaces, so the totals are exact again after every apply.
    private func accept(_ records: [JournalRecord], upTo: UInt64) {
        var cost = 0
        defer { backlog.accepted(cost: cost, pendingBytes: pendingBytes) }
        for record in records {
            cost += record.cost
            let previous = pending.updateValue(record.entry, forKey: PendingKey(record.key))
            let oldCost = previous.map { StoreEngine.cost(record.key, size: $0.value.count) } ?? 0
            pendingBytes += record.entry.value.count - (previous?.value.count ?? 0)
            diskBytes += record.cost - oldCost
            if previous == nil { diskEntries += 1 }
        }
        pendingSeq = max(pendingSeq, upTo)
    }

    /// Moves every pending set into the index in one transaction, with the highest sequence number applied, then
    /// deletes the sealed journal files (everything in them is now in the index).
    private func applyPending() throws(StoreError) {
        guard !pending.isEmpty else {
            deleteSealedJournals()
            return
        }
        do throws(SQLiteError) {
            try index.begin()
            var replacedBytes = 0
            var replacedRows = 0
            // In the index's order (namespace, then key, byte-wise as SQLite compares them): consecutive rows land in
            // the same B-tree pages. In the dictionary's order, 20,000 sets to random keys of a large index each read
            // their own pages (perf: the worker in `pread` and SQLite's WAL lookups), an apply taking ~4 s.
            // Sorted as plain words (`IndexOrder`): sorting the keys compared and moved Strings, 17 % of the daemon.
            var keys: [CacheKey] = [], entries: [CacheEntry] = []
            keys.reserveCapacity(pending.count)
            entries.reserveCapacity(pending.count)
            for (pendingKey, entry) in pending {
                keys.append(pendingKey.key)
                entries.append(entry)
            }
            for i in IndexOrder.positions(of: keys) {
                let key = keys[i], entry = entries[i]
                if let old = try index.replaced(key) {
                    replacedBytes += StoreEngine.cost(key, size: old.size)
                    replacedRows += 1
                    if let hash = old.blob { maybeUnreferenced.append(hash) }
                }
                try index.put(key, .inline(entry), accessedAt: entry.createdAt)
            }
            try index.setAppliedSeq(pendingSeq)
            index.resetStatements()
            try index.commit()
            // The journaled sets were counted as new entries; the rows they replaced are gone now.
            diskBytes -= replacedBytes
            diskEntries -= replacedRows
        } catch {
            index.rollback()
            index.resetStatements()
            maybeUnreferenced.removeAll()
            throw error.storeError
        }
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
        backlog.applied()
        for hash in maybeUnreferenced { removeIfUnused(hash) }
        maybeUnreferenced.removeAll()
        index.resetStatements()
        deleteSealedJournals()
    }

    /// `applyPendingFreeingJournals`; on a disk still full, full mode (the reserve given back) and once more. The
    /// failure when the pending sets cannot be applied even so.
    func applyPendingOrEnterFullMode(_ outcome: inout BatchOutcome) -> StoreError? {
        do throws(StoreError) {
            try applyPendingFreeingJournals()
            return nil
        } catch .diskFull(let why) {
            guard enterFullMode(why, &outcome) else { return .diskFull(why) }
            do throws(StoreError) { try applyPendingFreeingJournals() } catch { return error }
            return nil
        } catch {
            return error
        }
    }

    /// `applyPending`; on a full disk, the WAL is folded back and the sealed journals whose records are all in the
    /// index go first (their room is what the apply needs), and the apply is tried again.
    private func applyPendingFreeingJournals() throws(StoreError) {
        do { try applyPending() } catch {
            guard case .diskFull = error else { throw error }
            // Fold the WAL back into the database (a TRUNCATE checkpoint frees the WAL's file), then try again.
            index.checkpoint()
            deleteSealedJournals()
            try applyPending()
        }
    }

    /// Deletes the sealed journals whose records are all in the index; true when one went.
    @discardableResult
    private func deleteSealedJournals() -> Bool {
        if pending.isEmpty { appliedSeq = max(appliedSeq, pendingSeq) }
        let done = sealedJournals.filter { $0.lastSeq <= appliedSeq }
        guard !done.isEmpty else { return false }
        // What the journals held is in the index now; with `everysec`, on the disk too before they go (a
        // checkpoint syncs the WAL), so a power loss cannot take both copies.
        if config.fsync == .everysec { index.checkpoint() }
        // Kept to be written over while the disk has room to spare (eight reserves free), deleted otherwise.
        let keep = reserve.isHeld && reserve.freeBytes() >= 8 * reserve.size
        for journal in done { spares.retire(journal.path, keep: keep) }
        sealedJournals.removeAll { $0.lastSeq <= appliedSeq }
        return true
    }
}
