import FerryCache

/// Versions of the keys that have operations in flight, so that a completion arriving after a newer write, delete or
/// clear of its key never puts an old value back into the memory tier (which is answered from without looking at
/// the disk). Entries live only while their key has work in flight. Loop thread only.
///
/// ```swift
/// let ticket = tracker.begin(key, mutates: false)      // a disk get starts
/// ...
/// if tracker.end(key, ticket) { remember(key, entry) } // nothing newer happened to the key meanwhile
/// ```
struct MutationTracker {
    struct Ticket {
        fileprivate let version: UInt64
        fileprivate let epoch: UInt64
        /// Whether the operation holds a place in `keys` (see `beginShort`).
        fileprivate let registered: Bool
    }

    private var keys: [CacheKey: (inFlight: Int, version: UInt64)] = [:]
    /// Bumped by `clear`, per namespace (few, so kept).
    private var epochs: [String: UInt64] = [:]
    private var counter: UInt64 = 0

    var keysInFlight: Int { keys.count }

    /// An operation on `key` starts. A mutation (set, delete, touch) makes every earlier ticket of the key stale.
    mutating func begin(_ key: CacheKey, mutates: Bool) -> Ticket {
        var entry = keys[key] ?? (0, 0)
        entry.inFlight += 1
        if mutates {
            counter += 1
            entry.version = counter
        }
        keys[key] = entry
        return Ticket(version: entry.version, epoch: epochs[key.namespace] ?? 0, registered: true)
    }

    /// A mutation that ends within this loop iteration (a journaled set, acknowledged at its end). It needs a place
    /// in `keys` only to make earlier operations of the key stale; otherwise it is stale if, when it ends, anything
    /// else is in flight for the key (begun after it) or the namespace was cleared. The common case — nothing else
    /// in flight — costs no hashing at all.
    mutating func beginShort(_ key: CacheKey) -> Ticket {
        if keys.isEmpty && epochs.isEmpty { return Ticket(version: 0, epoch: 0, registered: false) }
        if keys[key] != nil { return begin(key, mutates: true) }
        return Ticket(version: 0, epoch: epochs[key.namespace] ?? 0, registered: false)
    }

    /// The operation ended; true when nothing newer happened to its key or namespace since it began.
    mutating func end(_ key: CacheKey, _ ticket: Ticket) -> Bool {
        guard ticket.registered else {
            if keys.isEmpty && epochs.isEmpty { return true }
            return keys[key] == nil && (epochs[key.namespace] ?? 0) == ticket.epoch
        }
        guard var entry = keys[key] else { return true }
        let current = entry.version == ticket.version && (epochs[key.namespace] ?? 0) == ticket.epoch
        entry.inFlight -= 1
        keys[key] = entry.inFlight == 0 ? nil : entry
        return current
    }

    /// A namespace was cleared: every ticket taken before is stale.
    mutating func cleared(_ namespace: String) {
        counter += 1
        epochs[namespace] = counter
    }
}
