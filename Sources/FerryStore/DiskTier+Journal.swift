#if canImport(Glibc)
import Glibc
#endif
import FerryCache

/// The disk tier's journal (`DiskTier`): each iteration's small sets written in one append and settled, the written
/// records handed to the worker or left to the memory tier (`JournalHandOff`, `JournalKeeping`), and the journal
/// files sealed and retired. Loop thread only.
extension DiskTier {
    /// Writes the small sets buffered since the last write in one append and settles every set written since the
    /// last call; hands records to the worker and seals the file when enough gathered.
    func settleJournal() {
        writeBufferedSets()
        // Nothing written since the last call (most loop iterations of a daemon serving reads): the acknowledgements
        // are not looked at (when `settledSets` was weak, its load and the release after it, on an object with a
        // side table, were 2 % of ferryd's cycles at 50 pings in flight, perf).
        if !writes.isEmpty || !writtenSets.isEmpty { acknowledgeWritten() }
        if handOff.records.count >= DiskTier.handOffRecords || handOff.cost >= handOffBytes { handOffJournaled(kept: false) }
        // Kept values go over in bounded batches too (many distinct keys): the pending sets a hand-off adds must fit
        // the room a full disk's reserve gives their apply, as `handOffBytes` makes sure for the others.
        if handOff.keptCost >= handOffBytes { handOffJournaled(kept: true) }
        if journal.fileBytes >= JournalRoom.rotateBytes {
            rotateJournal(applyNow: room.appliesSealed(sealedBytes + journal.fileBytes))
        } else if journal.fileBytes >= room.nextLookAt && room.look(journalBytes: journal.fileBytes) {
            rotateJournal(applyNow: true)  // short of room: every sealed file applied and gone at once
        }
    }

    /// Each set written (or failed) since the last call hears it, in order.
    private func acknowledgeWritten() {
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
    }

    /// The write itself. Also runs before any job is queued for the worker, so journaled sets keep their place in
    /// the order of disk work (a delete after a set is applied after it). A written record whose entry the memory
    /// tier still holds stays there, kept (`JournalKeeping.keep`); the others wait for the next hand-off.
    func writeBufferedSets() {
        guard journal.hasBuffered else { return }
        let cost = journal.bufferedCost
        var failure: StoreError?
        do throws(StoreError) {
            // Full mode began since these were taken: the room the reserve freed is for deletes and applies.
            if fullMode.isOn {
                journal.discardBuffered()
                throw StoreError.diskFull("the cache disk is full: new values are refused until there is room")
            }
            try journal.write(sync: config.fsync == .always, into: &writtenRecords)
            if let last = writtenRecords.last { handOff.written(upTo: last.seq) }
            // Each record swapped out of the array (an empty record in its place), never copied: a copy retains its
            // key's Strings and its value and releases them again, and `for record in`, a record read where it lies
            // through a pointer (which the calls in the loop might write through, for all the compiler knows) and
            // `reverse` then `popLast` each copied every record (callgrind).
            let keeper = self.keeper
            for i in writtenRecords.indices {
                var record = JournalRecord.empty
                swap(&record, &writtenRecords[i])
                switch keeper?.keep(record) ?? .handOver {
                case .handOver: handOff.add(record)
                case .kept: handOff.keep(record)
                // The earlier record had the same entry, so the same cost: counted once, as kept.
                case .keptInPlaceOfTheSame: uncountedJournalBytes -= record.cost
                }
            }
            writtenRecords.removeAll(keepingCapacity: true)
            // Superseded by the records just written: never handed over, no longer the disk's to count (reached where
            // they lie, not copied: there is one for each set that replaced a kept value).
            (keeper?.takeDisplaced() ?? []).withUnsafeBufferPointer { displaced in
                for i in displaced.indices {
                    handOff.dropKept(displaced[i])
                    uncountedJournalBytes -= displaced[i].cost
                }
            }
        } catch {
            if case .diskFull = error { journalFull = true }
            uncountedJournalBytes -= cost
            failure = error
            // The sets that replaced them were not written: the values before them still stand.
            for old in keeper?.takeDisplaced() ?? [] { handOff.addKept(old) }
        }
        if writtenSets.isEmpty {
            swap(&writtenSets, &journalAcks)
        } else {
            writtenSets.append(contentsOf: journalAcks)
            journalAcks.removeAll(keepingCapacity: true)
        }
        writes.append((writtenSets.count, failure))
    }

    /// A kept value left the memory tier (`JournalKeeping`): handed over with the next hand-off, before any job
    /// queued after now.
    func takeLeft(_ record: JournalRecord) { handOff.addKept(record) }

    /// Gives the worker the journaled sets it does not have yet, as one job in the current place of the job order,
    /// with the sequence number below which it has every set (`upTo`: below the oldest value the memory tier still
    /// keeps). With `kept`, the kept values too, so that the worker then has every journaled set. Done before any
    /// other job is queued (with `kept` for those that need the index current), at every sweep, and once enough
    /// gathered: not every iteration, because waking the worker costs two context switches, more than a whole set.
    func handOffJournaled(kept: Bool) {
        if kept, let keeper { for record in keeper.takeKept() { handOff.addKept(record) } }
        guard let (records, cost, upTo) = handOff.take(oldestKeptSeq: keeper?.oldestKeptSeq) else { return }
        handedOffCost += cost
        completions.append { [unowned self] _ in uncountedJournalBytes -= cost }  // the worker counts them now
        unsubmitted.append(.journaled(records, upTo: upTo))
    }

    /// Seals the active journal file (the next write starts a new one) and has the worker delete it once its records
    /// are in the index: applied at once with `applyNow`, else at the next apply (see `JournalRoom.appliesSealed`).
    func rotateJournal(applyNow: Bool) {
        writeBufferedSets()
        sealedBytes = applyNow ? 0 : sealedBytes + journal.fileBytes
        submit(.retireJournal(path: journal.seal(), applyNow: applyNow)) { _ in }
        room.rotated()
    }
}
