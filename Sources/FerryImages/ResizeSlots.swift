/// Who may make a variant now: at most `limit` resizes at once (the decoders' threads). An owner (client) alone
/// may use them all; when others wait, a freed slot goes first to an owner under its share (half the slots), so a
/// client asking a thousand variants cannot hold back another's one by more than one resize. Waiters are served
/// oldest first among those. A plain synchronous type: the `ImageLoader` actor owns it and resumes what it returns.
///
/// ```swift
/// var slots = ResizeSlots(limit: 2)
/// slots.acquire(owner: 7)                 // true: start now
/// slots.acquire(owner: 7)                 // true: nobody else waits
/// slots.acquire(owner: 8)                 // false: no slot free
/// slots.wait(owner: 8, ticket: 1)
/// slots.release(owner: 7)                 // [1]: owner 8's ticket starts before owner 7's next
/// ```
struct ResizeSlots {
    let limit: Int
    private(set) var running = 0
    private var byOwner: [UInt64: Int] = [:]
    private var waiting: [(owner: UInt64, ticket: UInt64)] = []

    init(limit: Int) { self.limit = max(1, limit) }

    var share: Int { max(1, limit / 2) }
    var waitingCount: Int { waiting.count }

    /// Takes a slot if one is free and nobody waits for it first.
    mutating func acquire(owner: UInt64) -> Bool {
        guard running < limit, waiting.isEmpty else { return false }
        take(owner)
        return true
    }

    mutating func wait(owner: UInt64, ticket: UInt64) { waiting.append((owner, ticket)) }

    /// A waiter gave up (cancelled): it leaves the line.
    mutating func leave(ticket: UInt64) { waiting.removeAll { $0.ticket == ticket } }

    /// Gives the owner's slot back; returns the tickets that may start now, in order (they hold their slots).
    mutating func release(owner: UInt64) -> [UInt64] {
        running -= 1
        if let n = byOwner[owner] { byOwner[owner] = n > 1 ? n - 1 : nil }
        var started: [UInt64] = []
        while running < limit, !waiting.isEmpty {
            // Over its share an owner waits while one under it does; only over-share owners waiting: the oldest.
            let next = waiting.remove(at: waiting.firstIndex { mayStart($0.owner) } ?? 0)
            take(next.owner)
            started.append(next.ticket)
        }
        return started
    }

    private func mayStart(_ owner: UInt64) -> Bool { (byOwner[owner] ?? 0) < share }

    private mutating func take(_ owner: UInt64) {
        running += 1
        byOwner[owner, default: 0] += 1
    }
}
