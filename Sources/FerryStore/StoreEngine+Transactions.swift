#if canImport(Glibc)
import Glibc
#endif
import CSQLite
import FerryCache

/// The engine's jobs inside one SQLite transaction (`runTransaction`) and each job's own work (`perform`): what a
/// batch does once the index is current. Worker thread only.
extension StoreEngine {
    /// Whether a sweep not due for an apply may run with sets still pending (after syncing the journal file at
    /// `syncJournal`, `everysec`): expired rows go and accesses are recorded beside them. Safe: a pending value is
    /// newer than any row and lands over whatever the sweep left; pending sets are counted as new entries, so a row
    /// the sweep removes is subtracted once and the apply finds none. Not when the journal could not be synced (the
    /// apply's checkpoint syncs instead), when a pending set has expired (its key must go, with any older row under
    /// it), or in full mode.
    func sweepsBesidePending(now: Int64, _ syncJournal: String?) -> Bool {
        guard reserve.isHeld else { return false }
        if let syncJournal, !Journal.sync(syncJournal) { return false }
        return !pending.values.contains { $0.isExpired(now: now) }
    }

    /// Runs jobs in one SQLite transaction (the index is current: nothing is pending, but beside a sweep).
    func runTransaction(_ jobs: [DiskJob], _ batch: inout BatchOutcome) -> [DiskResult] {
        var outcome = BatchOutcome(results: [], diskBytes: 0, diskEntries: 0, evictions: 0, expirations: 0)
        defer {
            batch.evictions += outcome.evictions
            batch.expirations += outcome.expirations
        }
        let before = (diskBytes, diskEntries)
        adoptedInTransaction.removeAll()
        do throws(SQLiteError) {
            try index.begin()
            for job in jobs {
                outcome.results.append(perform(job, &outcome))
                // Some errors make SQLite roll back the whole transaction: then nothing of this batch stands, and
                // the remaining jobs must not run in autocommit behind the batch's back.
                if !index.inTransaction { throw SQLiteError(code: SQLITE_ABORT, message: "the transaction was rolled back") }
            }
            // Reset before COMMIT: SQLite's automatic checkpoint runs inside it, and a statement still holding its
            // read would keep the WAL from being rewound.
            index.resetStatements()
            try index.commit()
            if jobs.contains(where: { if case .sweep = $0 { return true } else { return false } }) {
                // About once a second: fold the WAL back into the database and truncate it, so its size stays
                // bounded by a second of writes whatever the write pattern.
                index.checkpoint()
            }
            for hash in maybeUnreferenced { removeIfUnused(hash) }
        } catch {
            // The transaction is lost as a whole (typically a full disk): every write fails, reads run again alone.
            index.rollback()
            for hash in adoptedInTransaction { blobs.remove(hash) }  // no row points at them now
            index.resetStatements()
            (diskBytes, diskEntries) = before
            if let totals = try? index.totals(overheadPerRow: StoreConfig.diskOverheadPerEntry) {
                // Journaled sets not applied yet (a sweep runs beside them) are counted as `accept` counts them: as
                // new entries beside the index's rows, which the apply corrects.
                let pendingCost = pending.reduce(0) { $0 + StoreEngine.cost($1.key.key, size: $1.value.value.count) }
                (diskBytes, diskEntries) = (totals.bytes + pendingCost, totals.rows + pending.count)
            }
            outcome.evictions = 0
            outcome.expirations = 0
            let failure = error.storeError
            outcome.results = jobs.map { job in
                if case .get = job { return perform(job, &outcome) }
                if case .list = job { return perform(job, &outcome) }
                return .failed(failure)
            }
        }
        maybeUnreferenced.removeAll()
        index.resetStatements()
        return outcome.results
    }

    func perform(_ job: DiskJob, _ outcome: inout BatchOutcome) -> DiskResult {
        do {
            switch job {
            case .get(let key, let now, let streamAbove):
                guard let row = try index.get(key), !(row.expiresAt.map { now >= $0 } ?? false) else { return .entry(nil) }
                if let streamAbove, row.size > streamAbove, let hash = row.blob {
                    // Pinned before the answer leaves the worker: no later job can remove the file under the reply.
                    pins.pin(hash)
                    return .blob(StoredBlob(key: key, row: row, path: blobs.path(of: hash), hash: hash, release: releaseBlob))
                }
                let value: [UInt8]?
                if let inline = row.inline { value = inline } else if let hash = row.blob { value = blobs.read(hash, expectedSize: row.size) } else { value = nil }
                guard let value, value.count == row.size else { return .entry(nil) }  // never a torn value
                if let sum = row.sum, !sum.matches(value) {
                    // Damaged on disk: never served. Removed now where the disk allows (a read must not fail on a
                    // full disk), else found again and answered as a miss again.
                    outcome.damaged += 1
                    removeDamaged(key)
                    return .entry(nil)
                }
                // No write here (a full disk must not fail reads): the loop records the access for the next sweep.
                return .entry(CacheEntry(value: value, createdAt: row.createdAt, expiresAt: row.expiresAt))
            case .put(let key, let entry, let ifAbsent, let now):
                if ifAbsent, let old = try index.get(key), !(old.expiresAt.map { now >= $0 } ?? false) { return .stored(false) }
                try put(key, entry, now: now, outcome: &outcome)
                return .stored(true)
            case .adopt(let key, let file):
                try adopt(key, file, outcome: &outcome)
                return .stored(true)
            case .delete(let key, let now):
                guard let old = try index.delete(key) else { return .deleted(false) }
                forget(key, old)
                // An expired entry was already invisible: removing it is not "deleted" from the caller's view.
                return .deleted(!(old.expiresAt.map { now >= $0 } ?? false))
            case .touch(let key, let expiresAt, let now):
                guard let row = try index.get(key), !(row.expiresAt.map { now >= $0 } ?? false) else { return .touched(false) }
                return .touched(try index.touch(key, expiresAt: expiresAt))
            case .list(let namespace, let prefix, let cursor, let limit, let now):
                let rows = try index.list(namespace: namespace, prefix: Array(prefix.utf8), after: cursor.map { Array($0.utf8) }, limit: limit + 1, now: now)
                let page = rows.prefix(limit).map { ListedKey(key: String(decoding: $0.key, as: UTF8.self), size: $0.size, expiresAt: $0.expiresAt) }
                return .listed(Array(page), more: rows.count > limit)
            case .clear(let namespace, let now):
                var removed = 0
                while true {
                    let rows = try index.select(where: "namespace=?", { s throws(SQLiteError) in try s.bind(1, namespace) }, limit: 1000)
                    if rows.isEmpty { break }
                    for (key, row) in rows {
                        guard try index.delete(key) != nil else { continue }
                        forget(key, row)
                        // Entries already expired were invisible to the caller: not counted as removed.
                        if !(row.expiresAt.map { now >= $0 } ?? false) { removed += 1 }
                    }
                }
                return .cleared(removed)
            case .sweep(let now, let accessed, _, _):
                for key in accessed { try index.setAccessed(key, at: now) }
                outcome.expirations += try removeExpired(now: now, limit: 1000)
                return .swept
            case .releaseBlob(let hash):
                removeIfUnused(hash)
                return .swept
            case .damagedBlob(let key, let hash):
                // Counted by the loop when it found the damage; the row goes only if it still points at that file.
                guard let row = try index.get(key), row.blob == hash else { return .swept }
                removeDamaged(key)
                return .swept
            case .journaled, .retireJournal:
                return .swept  // handled in `run`
            }
        } catch let error as SQLiteError {
            return .failed(error.storeError)
        } catch let error as StoreError {
            return .failed(error)
        } catch {
            return .failed(.io("\(error)"))
        }
    }
}
