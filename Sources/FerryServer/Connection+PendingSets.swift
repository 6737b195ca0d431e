import FerryProtocol
import FerryStore

/// Sets answered on the fast path (`CacheSetOperation.answerHot`) whose journal write is still to come: in flight
/// like any request — for the duplicate-id rule, the in-flight limits and the daemon's drain — from the frame that
/// carried them to the end of the loop iteration, when the store calls `setSettled` and the reply is written.
/// Kept in a short array, not `inFlight`: a set is there for one iteration, and a `RequestContext` per set was a
/// measurable share of one.
extension Connection: SetAcknowledging {
    /// The set `id` was journaled on the fast path: in flight until it settles.
    func setPending(_ id: UInt64, counters: OperationCounters) {
        pendingSets.append((id, counters))
        requestsInFlight += 1
        table.totalInFlight += 1
    }

    /// The store did not take the set (the general path answers it): no longer in flight here.
    func dropPending(_ id: UInt64) { _ = endPending(id) }

    /// The set `id` is over: out of the in-flight counts; its counters, or nil when it was not pending.
    private func endPending(_ id: UInt64) -> OperationCounters? {
        guard let i = pendingSets.firstIndex(where: { $0.id == id }) else { return nil }
        let counters = pendingSets.remove(at: i).counters
        requestsInFlight -= 1
        table.requestEnded()
        return counters
    }

    func isPendingSet(_ id: UInt64) -> Bool { !pendingSets.isEmpty && pendingSets.contains { $0.id == id } }

    /// The store wrote (or failed to write) the set's record: the reply the general path would give, then the
    /// request is over. A connection closed, or closing after a protocol error (whose requests in flight get no
    /// frame), writes nothing; the set stays done.
    func setSettled(id: UInt64, failure: StoreError?) {
        guard let counters = endPending(id) else { return }
        guard life == .open || life == .finishing else { return }
        if let failure {
            let error = WireError(store: failure)
            table.stats.countError(error.code, op: counters)
            writeError(id: id, error: error)
        } else {
            writeHotFrame(id: id, body: UnsafeRawBufferPointer(start: nil, count: 0)) { $0.ascii("{\"stored\":true}") }
        }
        if life == .finishing && !hasRequestsInFlight { closeAfterFlush() }
    }
}
