import FerryProtocol

/// Who a `FetchJob` answers: a client's request (`RequestContext`), or the daemon itself (`InternalFetch`, used by
/// the image loader). Loop thread only.
protocol FetchResponder: AnyObject {
    /// Set by the job; called when the responder goes away (cancel, deadline, disconnect).
    var onCancel: (() -> Void)? { get set }
    func event(_ name: EventName, data: JSONObject, body: [UInt8])
    func succeed(_ result: JSONObject, body: ArraySlice<UInt8>)
    func fail(_ error: WireError)
}

extension RequestContext: FetchResponder {}

/// A fetch the daemon makes for itself: the outcome goes to a closure, and `cancel()` leaves the transfer (the last
/// waiter to leave stops it).
///
/// ```swift
/// let fetch = InternalFetch { outcome in ... }            // outcome: Result<(JSONObject, [UInt8]), WireError>
/// FetchJob(responder: fetch, service: service, spec: spec).start()
/// fetch.cancel()
/// ```
final class InternalFetch: FetchResponder {
    var onCancel: (() -> Void)?
    private var done: ((Result<(JSONObject, [UInt8]), WireError>) -> Void)?

    init(_ done: @escaping (Result<(JSONObject, [UInt8]), WireError>) -> Void) { self.done = done }

    func event(_ name: EventName, data: JSONObject, body: [UInt8]) {}

    func succeed(_ result: JSONObject, body: ArraySlice<UInt8>) { finish(.success((result, Array(body)))) }

    func fail(_ error: WireError) { finish(.failure(error)) }

    func cancel() {
        let handler = onCancel
        onCancel = nil
        done = nil
        handler?()
    }

    private func finish(_ outcome: Result<(JSONObject, [UInt8]), WireError>) {
        onCancel = nil
        let d = done
        done = nil
        d?(outcome)
    }
}
