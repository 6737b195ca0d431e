/// Work in progress per key, and what waits for a key's work to end: a count per key, and the closures to run
/// once it drops to zero. `ResponseStore` counts the responses being placed under a primary key (a lookup of one
/// waits); the daemon's `L2Responses` counts its Redis writes still waiting for a body (a lease's release waits).
/// A value type: the owner runs what `end` returns, after its own state is consistent again.
///
/// ```swift
/// var work = WorkByKey()
/// work.begin("GET https://a.test/x")
/// work.whenDone("GET https://a.test/x") { print("stored") }   // false: queued (true: nothing in progress, run it now)
/// for next in work.end("GET https://a.test/x") { next() }     // prints "stored"
/// ```
public struct WorkByKey {
    private var entries: [String: (count: Int, waiters: [() -> Void])] = [:]

    public init() {}

    public mutating func begin(_ key: String) {
        entries[key, default: (0, [])].count += 1
    }

    /// One piece of `key`'s work ended; when it was the last, what waited for it (to be run by the caller).
    public mutating func end(_ key: String) -> [() -> Void] {
        guard var entry = entries[key] else { return [] }
        entry.count -= 1
        guard entry.count == 0 else {
            entries[key] = entry
            return []
        }
        entries[key] = nil
        return entry.waiters
    }

    /// Queues `next` behind `key`'s work; false when none is in progress (the caller runs `next` itself, now).
    public mutating func whenDone(_ key: String, _ next: @escaping () -> Void) -> Bool {
        guard entries[key] != nil else { return false }
        entries[key]!.waiters.append(next)
        return true
    }
}
