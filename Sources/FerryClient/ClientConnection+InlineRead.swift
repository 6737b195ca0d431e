#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The last call of a batch reads the next replies in the reader thread's place (`ReadBaton`): it writes what the
/// batch queued, reads what has come meanwhile without waiting, and resumes those calls, whose last does the same.
/// Many calls in flight then cost no thread switch per batch; a read that finds nothing hands the socket back.
extension ClientConnection {
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
        var lentOn = false
        defer {
            if !lentOn {
                baton.withLock { $0.giveBack() }
                executor.wakeReader()
            }
        }
        // A socket that takes no more (its rest needs a wait for POLLOUT), or streams holding more than their read
        // credit: the reader thread's to wait for. (Another thread writing: reading is what lets it finish.)
        let flushed = writeQueued()
        guard flushed == .done || flushed == .writerBusy, credit.mayRead else { return }
        guard case .read(let lent, let sentHeld) = readReplies(reading) else { return }
        lentOn = lent
        // Held requests let go by this read: written now, as the reader thread would at its next turn (what the
        // socket does not take waits for the next holder, or the reader's stale timeout).
        if sentHeld { _ = writeQueued() }
    }

    /// Writes what the outbox holds as far as the socket takes it now, never waiting (the way of whoever reads the
    /// socket). A lost write shuts the socket down, so that the baton's holder reads its end and the connection ends
    /// through the one thread that may touch the read state.
    func writeQueued() -> Outbox.Flush {
        let flushed = outbox.flushAvailable()
        if flushed == .lost { connectionLost(closed) }
        return flushed
    }
}
