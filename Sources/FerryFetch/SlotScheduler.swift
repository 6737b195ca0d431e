/// Who gets the next transfer slot: the daemon's `capacity` transfers are shared among the clients that ask (each
/// client connection is an *owner*), so that no client holds more than its share while others wait, and time spent
/// waiting counts against each request's own deadline. A pure core: no loop, no curl; the clock is passed in.
///
/// Rules, in order:
/// - a client holds at most `maxPerOwner` slots (half the capacity by default), so one client asking for 70 black-hole
///   URLs leaves the other half to everyone else;
/// - a free slot goes to the waiting request whose owner holds the fewest slots now (the oldest among equals), so a
///   client that holds many slots waits behind one that holds none;
/// - a waiting request whose deadline passes leaves the queue (`expire`) and fails as timed out; one admitted late
///   gets only what is left of its time (`remainingMs`).
///
/// ```swift
/// var slots = SlotScheduler(capacity: 64)
/// if case .start = slots.request(id, owner: connection, deadlineMs: now + 5000, now: now) { start(id) }
/// for next in slots.finished(owner: connection) { start(next) }   // when a transfer ends
/// for late in slots.expire(now: now) { fail(late) }               // at slots.nextDeadline
/// ```
public struct SlotScheduler: Sendable {
    public enum Decision: Equatable, Sendable {
        case start
        case wait
    }

    struct Waiting: Sendable {
        let id: UInt64
        let owner: UInt64
        let deadlineMs: Int64?
        let queuedAtMs: Int64
    }

    public let capacity: Int
    public let maxPerOwner: Int
    private(set) var active: [UInt64: Int] = [:]
    private(set) var activeTotal = 0
    private var waiting: [Waiting] = []

    public init(capacity: Int, maxPerOwner: Int? = nil) {
        precondition(capacity > 0, "a scheduler needs at least one slot")
        self.capacity = capacity
        self.maxPerOwner = max(1, min(capacity, maxPerOwner ?? (capacity + 1) / 2))
    }

    public var waitingCount: Int { waiting.count }
    public var activeCount: Int { activeTotal }
    public func active(owner: UInt64) -> Int { active[owner] ?? 0 }

    /// A request for a slot: `.start` (the slot is taken) or `.wait` (queued until `finished` hands it one).
    public mutating func request(_ id: UInt64, owner: UInt64, deadlineMs: Int64?, now: Int64) -> Decision {
        if activeTotal < capacity && active(owner: owner) < maxPerOwner && !waiting.contains(where: { $0.owner == owner }) {
            take(owner)
            return .start
        }
        waiting.append(Waiting(id: id, owner: owner, deadlineMs: deadlineMs, queuedAtMs: now))
        return .wait
    }

    /// A transfer of `owner` ended (or was cancelled after it started): its slot goes to the waiting requests, fairest
    /// first. Returns the requests that start now (their slots taken), each with when it was queued.
    public mutating func finished(owner: UInt64) -> [(id: UInt64, owner: UInt64, queuedAtMs: Int64)] {
        if let n = active[owner] {
            active[owner] = n > 1 ? n - 1 : nil
            activeTotal -= 1
        }
        var started: [(UInt64, UInt64, Int64)] = []
        while activeTotal < capacity, let i = nextEligible() {
            let w = waiting.remove(at: i)
            take(w.owner)
            started.append((w.id, w.owner, w.queuedAtMs))
        }
        return started
    }

    /// Drops a waiting request (its client cancelled it); false when it was not waiting.
    public mutating func cancelWaiting(_ id: UInt64) -> Bool {
        guard let i = waiting.firstIndex(where: { $0.id == id }) else { return false }
        waiting.remove(at: i)
        return true
    }

    /// Waiting requests whose deadline has passed: removed, to be failed as timed out.
    public mutating func expire(now: Int64) -> [UInt64] {
        let late = waiting.filter { $0.deadlineMs.map { $0 <= now } ?? false }
        guard !late.isEmpty else { return [] }
        waiting.removeAll { $0.deadlineMs.map { $0 <= now } ?? false }
        return late.map(\.id)
    }

    /// The earliest deadline among waiting requests (when to call `expire`).
    public var nextDeadlineMs: Int64? { waiting.compactMap(\.deadlineMs).min() }

    /// What is left of a `timeoutMs` after waiting since `queuedAtMs`; nil when nothing is.
    public static func remainingMs(_ timeoutMs: Int, queuedAtMs: Int64, now: Int64) -> Int? {
        let left = Int64(timeoutMs) - (now - queuedAtMs)
        return left > 0 ? Int(left) : nil
    }

    private mutating func take(_ owner: UInt64) {
        active[owner, default: 0] += 1
        activeTotal += 1
    }

    /// The waiting request to start next: among owners under their cap, the one holding fewest slots; the oldest
    /// request of that owner (the queue is in arrival order).
    private func nextEligible() -> Int? {
        var best: (index: Int, held: Int)?
        for (i, w) in waiting.enumerated() {
            let held = active(owner: w.owner)
            guard held < maxPerOwner else { continue }
            if best == nil || held < best!.held { best = (i, held) }
        }
        return best?.index
    }
}
