#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The last call of a batch reads the next replies in the reader thread's place (`ReadBaton`): it writes what the
/// batch queued, reads what has come meanwhile without waiting, and resumes those calls, whose last does the same.
/// Many calls in flight then cost no thread switch per batch; a read that finds nothing hands the socket back.
extension ClientConnection {
    /// Whether the calling thread reads the socket now: the reader thread, or a call reading in its place. Such a
    /// thread never waits for a write to finish: ferryd may be waiting for it to read.
    var readsSocket: Bool {
        executor.onReaderThread || inlineReader.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// The task of a resumed call runs again. The last of a batch writes what the others queued: on the reader
    /// thread at its next turn; elsewhere now, and then reads the next replies itself when it may take the baton.
    func callReturned() {
        guard outbox.resumed() else { return }
        if executor.onReaderThread {
            baton.withLock { $0.returnedOnThread() }
        } else if lendsBaton && baton.withLock({ $0.take() }) {
            readInline()
        } else if !outbox.flush() {
            connectionLost(closed)
        }
    }

    /// Holding the baton: writes what the batch queued as far as the socket takes it now, then one read. The
    /// baton goes back to the reader thread (woken for it) unless the read resumed calls, which lent it on.
    private func readInline() {
        inlineReader.store(UInt(pthread_self()), ordering: .relaxed)
        var lentOn = false
        defer {
            inlineReader.store(0, ordering: .relaxed)
            if !lentOn {
                baton.withLock { $0.giveBack() }
                executor.wakeReader()
            }
        }
        // A socket that takes no more (its rest needs a wait for POLLOUT), or streams holding more than their read
        // credit: the reader thread's to wait for. (Another thread writing: reading is what lets it finish.)
        let flushed = outbox.flushAvailable()
        guard flushed == .done || flushed == .writerBusy, credit.mayRead else { return }
        guard case .read(let lent, let sentHeld) = readReplies(reading) else { return }
        lentOn = lent
        // Held requests let go by this read: written now, as the reader thread would at its next turn (what the
        // socket does not take waits for the next holder, or the reader's stale timeout).
        if sentHeld { _ = outbox.flushAvailable() }
    }
}
