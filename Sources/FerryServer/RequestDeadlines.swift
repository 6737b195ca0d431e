import FerryLoop
import FerryProtocol

/// The `timeout_ms` of requests still in flight: one `DeadlineQueue` and one loop timer armed for the earliest
/// deadline. When one passes, the request (looked up again by connection and id, and matched by serial, since ids
/// are reused) is cancelled with `deadline_exceeded`. Loop thread only.
///
/// ```swift
/// let deadlines = RequestDeadlines(loop: loop) { connection, id in table.request(connection: connection, id: id) }
/// deadlines.schedule(connection: 3, request: request, afterMs: 500, live: table.totalInFlight)
/// deadlines.close()
/// ```
final class RequestDeadlines {
    private struct Key {
        let connection: UInt64
        let request: UInt64
        let serial: UInt64
    }

    private let loop: EventLoop
    private let lookup: (_ connection: UInt64, _ request: UInt64) -> RequestContext?
    private var queue = DeadlineQueue<Key>()
    private var armed: UInt64?
    private var timer: LoopTimer?

    init(loop: EventLoop, lookup: @escaping (_ connection: UInt64, _ request: UInt64) -> RequestContext?) {
        self.loop = loop
        self.lookup = lookup
        timer = LoopTimer(loop: loop) { [unowned self] _ in fired() }
    }

    /// `live`: requests in flight now. Entries of finished requests stay until their time; they are dropped when
    /// they outnumber the live ones, so long timeouts on short requests cannot grow the heap without bound.
    func schedule(connection: UInt64, request: RequestContext, afterMs ms: UInt64, live: Int) {
        if queue.count > 2 * live + 1024 {
            queue.compact { key in lookup(key.connection, key.request)?.serial == key.serial }
            armed = nil
        }
        queue.schedule(Key(connection: connection, request: request.id, serial: request.serial), at: loop.nowMs + ms)
        arm()
    }

    /// Stops the timer for good (the daemon is stopping: what is in flight is answered otherwise).
    func close() {
        timer?.close()
        timer = nil
    }

    private func arm() {
        guard let next = queue.nextDeadline, next != armed else { return }
        let now = loop.nowMs
        armed = next
        timer?.start(afterMs: next > now ? next - now : 0)
    }

    private func fired() {
        armed = nil
        for key in queue.popExpired(now: loop.nowMs) {
            guard let request = lookup(key.connection, key.request), request.serial == key.serial else { continue }
            request.cancel(with: WireError(.deadlineExceeded, "the request's timeout_ms elapsed"))
        }
        arm()
    }
}
