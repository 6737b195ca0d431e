#if canImport(Glibc)
import Glibc
#endif

/// Retired journal files kept to be written over, as RocksDB recycles its logs. A new journal file costs the kernel
/// its pages and blocks as it grows (the page cache, ext4's delayed allocation: two thirds of the loop thread's
/// `pwrite` at 64 KiB sets, perf) and a deleted one costs freeing them again (the disk worker's `unlink`, a third of
/// its time there); a file written over from its start reuses both. The worker retires a file into a free slot
/// (`spare-journal.0` … `.3`, never replacing one) or deletes it; the loop takes one when it starts a generation.
///
/// Written over, a file keeps its old records past the new ones; `Journal.read` stops at the first record whose
/// sequence number is not above the one before, which every old record is: each was written, applied and its file
/// retired before the file was taken again, and sequence numbers only grow.
///
/// ```swift
/// let spares = JournalSpares(directory: dir)
/// spares.retire(sealedPath, keep: true)          // worker: the file's records are all in the index
/// if spares.take(as: Journal.path(dir, generation: 8)) { /* open it without O_TRUNC, write from 0 */ }
/// spares.removeAll()                              // start-up and clean stop: spares never outlive a daemon
/// ```
struct JournalSpares: Sendable {
    static let prefix = "spare-journal."
    /// At most this many: the sealed files one apply retires (`JournalRoom.sealedBytesLimit` in 32 MiB files).
    static let slots = 4
    let directory: String

    private func slot(_ i: Int) -> String { "\(directory)/\(JournalSpares.prefix)\(i)" }

    /// Keeps a retired journal file as a spare when `keep` and a slot is free; deletes it otherwise.
    /// Returns whether it was kept.
    @discardableResult
    func retire(_ path: String, keep: Bool) -> Bool {
        if keep {
            // A link, not a rename: it never replaces a slot's spare (that would free its pages, the cost this saves),
            // and the loop may be taking that one at the same moment. Killed in between, start-up deletes the spare
            // and replays the journal file, whose records are all at or below `applied_seq`.
            for i in 0..<JournalSpares.slots where link(path, slot(i)) == 0 {
                unlink(path)
                return true
            }
        }
        unlink(path)
        return false
    }

    /// Renames a spare to `path` (the next generation's file); false when there is none.
    func take(as path: String) -> Bool {
        for i in 0..<JournalSpares.slots where rename(slot(i), path) == 0 { return true }
        return false
    }

    /// Deletes every spare: their room is the disk's again.
    func removeAll() {
        for i in 0..<JournalSpares.slots { unlink(slot(i)) }
    }
}
