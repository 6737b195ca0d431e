/// Who reads the connection's socket next: its reader thread, or the last of the calls a read resumed, on its own
/// thread, right after it wrote the requests those calls queued.
///
/// Why: a call resumed by the reader thread runs on another thread (the global executor's). When the reader thread
/// does every read, each batch of replies costs two thread switches on the client's core — the reader woken by
/// ferryd's write, preempting the thread running calls, then going back to sleep — and with them the scheduler's
/// wake-up interrupts: about a quarter of FerryClient's time at 50 calls in flight (perf, BENCHMARKS.md). By the
/// time the last call of a batch has run, the next replies are usually there, so that call reads them itself
/// (without waiting: `MSG_DONTWAIT`) and the reader thread sleeps. It takes the baton back when a holder finds
/// nothing to read, or when a lent baton went `staleAfterNs` without being used (a resumed call that never runs
/// must not stop the replies of every other call).
///
/// Only the holder touches the read state (decoder, descriptors); the states below say who that is.
///
/// ```swift
/// var baton = ReadBaton()
/// baton.lend()                                   // the reader resumes calls: the last of them may read
/// baton.take()                                   // true: that call (not the reader thread) reads now
/// baton.lend()                                   // its read resumed more calls
/// baton.threadTurn(nowNs: 10)                    // .wait: the reader thread leaves the socket to them
/// ```
struct ReadBaton: Equatable {
    enum Holder: Equatable {
        /// The reader thread reads (it polls the socket).
        case thread
        /// Lent to the calls being resumed: the last of them to run may take it (`take`).
        case lent
        /// A call's thread is reading now.
        case inline
        /// The reader thread has ended: nobody reads again.
        case closed
    }

    private(set) var holder: Holder = .thread
    /// Times the baton was lent; the reader thread takes a lent baton back when this did not move for `staleAfterNs`.
    private(set) var lends: UInt64 = 0
    /// Times a call took it to read in the reader thread's place.
    private(set) var takes: UInt64 = 0
    /// `lends` when the reader thread first saw the current loan, and when (`threadTurn`'s clock).
    private var lendsSeen: UInt64?
    private var seenAtNs: Int64 = 0
    /// Set by `connectionClosing`.
    private var closing = false

    /// The holder (reader thread or inline reader) is about to resume calls whose tasks will each call
    /// `callReturned`: the last of them may read next.
    mutating func lend() {
        guard holder == .thread || holder == .inline else { return }
        // Closing: the reader thread reads the end (an inline holder's loan goes to it, already woken).
        guard !closing else {
            holder = .thread
            return
        }
        holder = .lent
        lends &+= 1
    }

    /// The last resumed call of a batch, on a thread other than the reader's: true when it now holds the baton and
    /// reads (it must end with `lend` or `giveBack`).
    mutating func take() -> Bool {
        guard holder == .lent else { return false }
        holder = .inline
        takes &+= 1
        return true
    }

    /// An inline reader is done without resuming calls (nothing to read, no read credit, the socket full, the
    /// connection gone): the reader thread reads again, and must be woken to.
    mutating func giveBack() {
        if holder == .inline { holder = .thread }
    }

    /// The last resumed call ran on the reader thread itself (tasks preferring `FerryClient.executor`): the reader
    /// thread goes on reading, as if it had never lent the baton.
    mutating func returnedOnThread() {
        if holder == .lent { holder = .thread }
    }

    enum Turn: Equatable {
        /// The reader thread holds the baton: it waits for replies on the socket and reads them.
        case read
        /// A call holds it or may take it: the reader thread waits for its wake-up pipe (jobs, a baton given back)
        /// for at most one stale interval, then asks again.
        case wait
        /// The baton is closed: the reader thread's loop has ended.
        case closed
    }

    /// A lent baton the same for this long comes back to the reader thread: the calls it went to are not running.
    /// The outbox's interval for frames such calls queued (1 ms): one notion of a call that does not run.
    static let staleAfterNs = Int64(Outbox.staleAfterMs) * 1_000_000

    /// The reader thread's question before each read, at `nowNs` (a monotonic clock's nanoseconds). While the
    /// answer is `wait`, `waitMs` says how long to wait at most before asking again.
    mutating func threadTurn(nowNs: Int64) -> Turn {
        switch holder {
        case .thread:
            lendsSeen = nil
            return .read
        case .closed:
            return .closed
        case .inline:
            lendsSeen = nil
            return .wait
        case .lent:
            // Not lent again for `staleAfterNs` since the reader first saw this loan: nobody is using it. Measured
            // by the clock, not by a wait that ran out, so that wake-ups (jobs, a pipe) neither hold it off nor
            // hurry it.
            if closing || (lendsSeen == lends && nowNs - seenAtNs >= ReadBaton.staleAfterNs) {
                holder = .thread
                lendsSeen = nil
                return .read
            }
            if lendsSeen != lends {
                lendsSeen = lends
                seenAtNs = nowNs
            }
            return .wait
        }
    }

    /// How long (ms, for `poll`) the reader thread may wait before its next `threadTurn` at `nowNs`, once that said
    /// `wait`: until the loan it saw goes stale, at least 1 ms (`poll` counts whole milliseconds).
    func waitMs(nowNs: Int64) -> Int32 {
        let left = holder == .lent && lendsSeen == lends ? seenAtNs + ReadBaton.staleAfterNs - nowNs : ReadBaton.staleAfterNs
        return Int32(max(1, (left + 999_999) / 1_000_000))
    }

    /// The connection is being closed: a lent baton comes back at the reader thread's next turn (it then reads the
    /// end of the socket and ends), and none is lent again.
    mutating func connectionClosing() { closing = true }

    /// The reader thread ends: nobody takes the baton again.
    mutating func close() { holder = .closed }
}
