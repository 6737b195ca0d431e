#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Flow control between the connection's reader thread and the tasks consuming streamed replies: body bytes handed
/// to a stream count until its consumer takes them, and past `limit` the reader stops reading the socket (the
/// daemon's own backpressure then holds the rest). Without it, a consumer slower than the socket — a CLI writing a
/// 1 GiB download to a slow disk — would have the whole body pile up in the client.
///
/// ```swift
/// credit.waitForRoom()   // reader thread, before each read of the socket
/// credit.take(n)         // a chunk of n bytes went to a stream
/// credit.give(n)         // its consumer took it
/// ```
final class ReadCredit: @unchecked Sendable {
    let limit: Int
    private var outstanding = 0
    private var isOpen = false
    /// Bumped whenever a consumer takes something: a wait that sees no progress for `stuckAfterMs` ends.
    private var consumed: UInt64 = 0
    /// Set when a wait saw no progress: the reader reads on until a consumer takes something again.
    private var stuck = false
    /// Allocated: a pthread mutex must not move, and a stored property's address is not stable.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// A wait that saw no consumer take anything for this long reads on: the consumer may be waiting for another
    /// reply on this same connection (one socket carries every call), and holding the reader would deadlock it.
    /// Only while another reply could be waited for (`othersWait`): with one request in flight, its consumer
    /// waits for nothing else here, and reading on would pile its whole body up in memory (a 1 GiB `ferry fetch`
    /// piped into a reader that paused held the gibibyte).
    static let stuckAfterMs = 1000

    init(limit: Int) {
        self.limit = limit
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(cond, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        cond.deallocate()
    }

    /// Blocks while streams hold more than `limit` unconsumed bytes and their consumers are taking them (never
    /// after `open`; not past a second without progress while `othersWait`, asked under no lock of this one).
    /// Also returns when `orElse` is true (checked at each wake-up: `nudge` wakes it).
    func waitForRoom(orElse: () -> Bool = { false }, othersWait: () -> Bool = { true }) {
        pthread_mutex_lock(mutex)
        while outstanding > limit && !isOpen && !stuck && !orElse() {
            let seen = consumed
            var deadline = timespec()
            clock_gettime(CLOCK_REALTIME, &deadline)
            deadline.tv_sec += ReadCredit.stuckAfterMs / 1000
            _ = pthread_cond_timedwait(cond, mutex, &deadline)
            guard consumed == seen && outstanding > limit else { continue }
            pthread_mutex_unlock(mutex)
            let mayDeadlock = othersWait()
            pthread_mutex_lock(mutex)
            // Nobody consumed, and a reply behind the held bytes may be what a consumer waits for: read on.
            if mayDeadlock && consumed == seen { stuck = true }
        }
        pthread_mutex_unlock(mutex)
    }

    func take(_ n: Int) { change(by: n) }
    func give(_ n: Int) { change(by: -n) }

    /// Whether `waitForRoom` would return now (without its `orElse`).
    var mayRead: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return outstanding <= limit || isOpen || stuck
    }

    /// Wakes a waiting reader to look at its `orElse` again.
    func nudge() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(cond)
        pthread_mutex_unlock(mutex)
    }

    /// No more waiting (the connection is closing).
    func open() {
        pthread_mutex_lock(mutex)
        isOpen = true
        pthread_cond_broadcast(cond)
        pthread_mutex_unlock(mutex)
    }

    var outstandingBytes: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return outstanding
    }

    private func change(by n: Int) {
        guard n != 0 else { return }
        pthread_mutex_lock(mutex)
        outstanding += n
        if n < 0 {
            consumed &+= 1
            stuck = false
        }
        if outstanding <= limit || n < 0 { pthread_cond_broadcast(cond) }
        pthread_mutex_unlock(mutex)
    }
}

/// One stream's share of the connection's `ReadCredit`: what was delivered to it and not consumed yet, given back
/// whole when the stream ends (its consumer stopped early, or the call was cancelled).
final class StreamAccount: Sendable {
    private let credit: ReadCredit
    /// Unconsumed bytes, and whether the stream ended (then everything was given back, and nothing counts).
    private let state = Mutex((outstanding: 0, ended: false))

    init(credit: ReadCredit) { self.credit = credit }

    func delivered(_ n: Int) {
        let counted = state.withLock { s -> Bool in
            guard !s.ended else { return false }
            s.outstanding += n
            return true
        }
        if counted { credit.take(n) }
    }

    func consumed(_ n: Int) {
        let counted = state.withLock { s -> Bool in
            guard !s.ended else { return false }
            s.outstanding -= n
            return true
        }
        if counted { credit.give(n) }
    }

    /// The stream finished or was dropped: its items no longer hold the reader (those still buffered for a
    /// consumer are few: the final reply came).
    func ended() {
        let n = state.withLock { s -> Int in
            defer { s = (0, true) }
            return s.ended ? 0 : s.outstanding
        }
        credit.give(n)
    }
}

/// The items of a streamed call (`FerryClient.stream`), consumed with `for try await`: events as they come, then the
/// final reply. Reading it is what lets the connection read more (`ReadCredit`); dropping it cancels the call.
public struct FerryEventStream: AsyncSequence, Sendable {
    public typealias Element = FerryStreamItem
    let base: AsyncThrowingStream<FerryStreamItem, any Error>
    let account: StreamAccount

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<FerryStreamItem, any Error>.AsyncIterator
        let account: StreamAccount

        public mutating func next() async throws -> FerryStreamItem? {
            let item = try await base.next()
            if case .event(_, _, let body)? = item { account.consumed(body.count) }
            return item
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), account: account) }
}
