#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Request frames on their way to the socket, written in batches.
///
/// Why: one read of the socket resumes many calls, whose tasks then run one after another and each send their next
/// request. Written one by one, every request costs a system call and a wake-up of ferryd — most of a pipelined
/// call's cost, measured. So while calls resumed by the reader have not run yet, a request joins the outbox, and the
/// last of those calls to run writes everything at once: the batching a poll loop gets for free. A request sent when
/// no resumed call is pending is written at once, so a lone call waits for nothing.
///
/// A resumed call whose executor is slow to run it (a busy main actor) would hold the batch back; the reader thread
/// bounds that: when it finds frames waiting longer than `staleAfterMs`, it has them written (`ClientConnection`).
///
/// ```swift
/// outbox.resuming(3)                        // reader: three calls' continuations are about to resume
/// if outbox.resumed() { outbox.flush() }    // that call runs again; the last writes the batch
/// outbox.send(frames, if: { stillWanted })  // a call's request: queued or written
/// ```
final class Outbox: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        /// Requests in `bytes`.
        var queued = 0
        /// Calls resumed whose tasks have not run again yet.
        var resumedPending = 0
    }

    /// Requests this large are written straight from their frames, not copied into the outbox first.
    static let directBytes = 256 * 1024
    /// A batch this large is written without waiting for the rest: ferryd starts on it while this side makes the
    /// next requests.
    static let batchRequests = 16
    /// How long the reader lets frames wait for a resumed call that does not run.
    static let staleAfterMs: Int32 = 1

    let fd: Int32
    private let state = ThreadLock(State())
    /// Held while writing, so batches reach the socket in the order they were taken; holds the spare buffer that
    /// takes the next batch's bytes, so that batching allocates nothing once warm.
    private let writer = ThreadLock<[UInt8]>([])

    init(fd: Int32) { self.fd = fd }

    /// One request's frames (kept together): queued while resumed calls are pending, else written now with anything
    /// queued before them. `stillWanted` is asked under the outbox's lock, so a request cancelled meanwhile is not
    /// sent and its cancel request cannot overtake it. False when the socket is gone.
    func send(_ frames: [[UInt8]], if stillWanted: () -> Bool, blocking: Bool = true) -> Bool {
        let size = frames.reduce(0) { $0 + $1.count }
        if blocking && size >= Outbox.directBytes { return write(thenFrames: frames, if: stillWanted) }
        return send(if: stillWanted, blocking: blocking) { bytes in
            for frame in frames { bytes.append(contentsOf: frame) }
            return true
        }
    }

    /// One request encoded straight into the queue (a small one: no frame of its own to allocate and copy):
    /// `encode` appends its frames and returns true, or appends nothing and returns false (then nothing is sent).
    /// Queued or written as the other `send`. False when the socket is gone.
    func send(if stillWanted: () -> Bool, blocking: Bool = true, encode: (inout [UInt8]) -> Bool) -> Bool {
        let writeNow = state.withLock { s -> Bool in
            guard stillWanted(), encode(&s.bytes) else { return false }
            s.queued += 1
            // The reader thread (not `blocking`) writes what its resumed calls queued once they all ran.
            return s.queued >= Outbox.batchRequests || (blocking && s.resumedPending == 0)
        }
        return writeNow ? flush(blocking: blocking) : true
    }

    /// The reader is about to resume `calls` continuations.
    func resuming(_ calls: Int) {
        state.withLock { $0.resumedPending += calls }
    }

    /// A resumed call runs again. True when it was the last of those pending: it then writes what they queued
    /// (`flush`; `flushAvailable` on a thread that reads the socket, which must never wait for ferryd to read).
    func resumed() -> Bool {
        state.withLock { s in
            s.resumedPending -= 1
            return s.resumedPending == 0
        }
    }

    /// Whether frames are queued or may be soon: the reader then waits for replies with a timeout.
    var mayHoldFrames: Bool { state.withLock { $0.resumedPending > 0 || !$0.bytes.isEmpty } }

    /// Whether frames are queued now.
    var holdsFrames: Bool { state.withLock { !$0.bytes.isEmpty } }

    /// Writes everything queued. False when the socket is gone. Not `blocking`: `flushAvailable`.
    func flush(blocking: Bool = true) -> Bool {
        blocking ? write(thenFrames: [], if: { true }) : flushAvailable() != .lost
    }

    enum Flush { case done, socketFull, writerBusy, lost }

    /// Writes what the socket takes now and leaves the rest queued, also when another thread is writing: the
    /// reader thread's way, which must never wait for ferryd to read while ferryd may be waiting for it to read.
    func flushAvailable() -> Flush {
        writer.withLockIfFree { spare -> Flush in
            state.withLock { s in
                swap(&s.bytes, &spare)
                s.queued = 0
            }
            defer { spare.removeAll(keepingCapacity: true) }
            let written = spare.withUnsafeBytes { SocketIO.writeAvailable(fd, $0) }
            guard written >= 0 else { return .lost }
            guard written < spare.count else { return .done }
            // The rest goes back in front of anything queued meanwhile (the writer lock kept other writers out).
            state.withLock { s in s.bytes.insert(contentsOf: spare[written...], at: 0) }
            return .socketFull
        } ?? .writerBusy
    }

    /// Writes everything queued, then `frames` straight from where they are (a large request), unless
    /// `stillWanted` says no (then nothing is written). False when the socket is gone.
    private func write(thenFrames frames: [[UInt8]], if stillWanted: () -> Bool) -> Bool {
        writer.withLock { spare in
            let wanted = state.withLock { s -> Bool in
                guard stillWanted() else { return false }
                swap(&s.bytes, &spare)
                s.queued = 0
                return true
            }
            defer { spare.removeAll(keepingCapacity: true) }
            guard wanted else { return true }
            // Queued requests first: they were sent before `frames`.
            if !spare.isEmpty && !spare.withUnsafeBytes({ SocketIO.writeAll(fd, $0) }) { return false }
            for frame in frames where !frame.withUnsafeBytes({ SocketIO.writeAll(fd, $0) }) { return false }
            return true
        }
    }
}
