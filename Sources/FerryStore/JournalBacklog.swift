import Synchronization

/// What journaled sets hold in memory that the index does not have yet, as the loop needs it to bound that memory
/// (`DiskTier.settlesAtOnce`): the worker counts the records it has taken (`accepted`, by cost) and the value bytes
/// its pending sets hold once newer values of a key replaced older ones (`pending`); the loop knows what it handed
/// over, so handed minus accepted is what still waits in the worker's queue.
///
/// Why not the loop's own count (`uncountedJournalBytes` + the worker's last reported pending bytes): that one is
/// settled only when a whole batch of the worker comes back, so it counts a value until the batch that applied it
/// ends, and counts every value of a key as held where only the newest is (64 KiB sets to 100 keys: 64 MiB counted
/// against 6.4 MB held, and sets sent one by one to the worker for it). It stays the disk's count: the journal file
/// does hold every record until it is retired.
///
/// ```swift
/// let backlog = JournalBacklog()
/// backlog.accepted(cost: 300, pendingBytes: 100)   // the worker took records of cost 300; pending holds 100 bytes
/// backlog.held(handedOff: 500)                      // 300: 200 still queued + 100 pending
/// ```
final class JournalBacklog: Sendable {
    private let acceptedCost = Atomic<Int>(0)
    private let pendingBytes = Atomic<Int>(0)

    /// Worker thread: records of `cost` were taken into pending, which now holds `pendingBytes` of values.
    func accepted(cost: Int, pendingBytes bytes: Int) {
        acceptedCost.wrappingAdd(cost, ordering: .relaxed)
        pendingBytes.store(bytes, ordering: .relaxed)
    }

    /// Worker thread: pending was applied to the index (or emptied).
    func applied() { pendingBytes.store(0, ordering: .relaxed) }

    /// Loop thread: the bytes held for the journal's sets, given the cost of all records handed to the worker so far.
    func held(handedOff: Int) -> Int {
        handedOff - acceptedCost.load(ordering: .relaxed) + pendingBytes.load(ordering: .relaxed)
    }
}
