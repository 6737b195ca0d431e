#if canImport(Glibc)
import Glibc
#endif
import FerryBytes
import FerryCache

/// The engine's group commit: sets that reach the worker together commit together, and pending journaled sets are
/// applied in the index's own order. Worker thread only.
extension StoreEngine {
    /// Whether `a` comes before `b` in the index (`PRIMARY KEY (namespace, key)`, compared byte-wise).
    static func indexOrder(_ a: CacheKey, _ b: CacheKey) -> Bool {
        let namespaces = UTF8Bytes.compare(a.namespace, b.namespace)
        return namespaces != 0 ? namespaces < 0 : UTF8Bytes.compare(a.key, b.key) < 0
    }

    /// How many `.put` jobs follow each other from `start`.
    static func putsStarting(at start: Int, in jobs: [DiskJob]) -> Int {
        var end = start
        while end < jobs.count, case .put = jobs[end] { end += 1 }
        return end - start
    }

    /// Sets that could not take the journal (large values, `if_absent`, a set over the journal's bounds), one after
    /// another in the batch: one transaction for them all (group commit), where each had its own. Why: over the
    /// journal's memory bound, a flood of sets to distinct keys ran at one commit a set. Only sets are grouped: one
    /// that fails for a full disk is run again alone once in full mode — refused, as every new value then is — so
    /// no write lands out of order; a delete or touch run again after the writes behind it could undo them.
    func runPuts(_ range: Range<Int>, _ jobs: inout [DiskJob], _ outcome: inout BatchOutcome) {
        var group: [DiskJob] = []
        group.reserveCapacity(range.count)
        for i in range {
            var job = DiskJob.journaled([], upTo: 0)
            swap(&job, &jobs[i])
            group.append(job)
        }
        if let failure = applyPendingOrEnterFullMode(&outcome) {
            for i in range { outcome.results[i] = .failed(failure) }
            return
        }
        for (i, result) in zip(range, runTransaction(group, &outcome)) {
            outcome.results[i] = result
            if case .failed(.diskFull(let why)) = result {
                _ = enterFullMode(why, &outcome)
                outcome.results[i] = runOne(group[i - range.lowerBound], &outcome)
            }
        }
        if !reserve.isHeld {
            index.releaseFreePages()
            index.checkpoint()
        }
    }
}
