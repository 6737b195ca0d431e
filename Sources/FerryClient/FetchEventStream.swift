import FerryProtocol

/// What `fetchStream` yields: the head once, as soon as it is known and before any of the body; progress while
/// the daemon downloads; the body in pieces; then the whole response.
public enum FetchEvent: Sendable, Equatable {
    /// Status, headers, cache status and timing so far; its `body` is empty. First (after any progress), always.
    case head(FetchResponse)
    case progress(received: Int, total: Int?)
    case chunk([UInt8])
    /// The end: status, headers and the rest; its `body` is empty (the bytes came as chunks), and its `file` is the
    /// body when it came as a descriptor instead (`FetchRequest.bodyAsFile`: then no chunk came).
    case response(FetchResponse)
}

/// `fetchStream`'s events, read lazily from the call's stream (no buffer of its own: a slow consumer holds the
/// connection's reader, not memory).
///
/// ```swift
/// for try await event in client.fetchStream(FetchRequest(url)) {
///     switch event {
///     case .head(let r): print(r.status)
///     case .chunk(let bytes): sink(bytes)
///     case .progress, .response: break
///     }
/// }
/// ```
public struct FetchEventStream: AsyncSequence, Sendable {
    public typealias Element = FetchEvent
    let upstream: FerryEventStream

    public struct AsyncIterator: AsyncIteratorProtocol {
        var upstream: FerryEventStream.AsyncIterator
        /// What the final reply still has to hand out, in order (its body, its response).
        var pending: [FetchEvent] = []
        var sawHead = false
        var done = false

        public mutating func next() async throws -> FetchEvent? {
            if !pending.isEmpty { return pending.removeFirst() }
            while !done, let item = try await upstream.next() {
                switch item {
                case .event(let name, let data, let body):
                    switch EventName(rawValue: name) {
                    case .chunk?: return .chunk(body)
                    case .progress?:
                        return .progress(received: Int(data["received"]?.intValue ?? 0), total: data["total"]?.intValue.map { Int($0) })
                    case .head?:
                        sawHead = true
                        return .head(FetchResponse(result: data, body: []))
                    default: continue  // an event this version does not know
                    }
                case .final(let reply):
                    // A body small enough for one frame came with no head event: its head is the response's.
                    done = true
                    let response = FetchResponse(result: reply.result, body: [], file: reply.file)
                    if !sawHead { pending.append(.head(response)) }
                    if !reply.body.isEmpty { pending.append(.chunk(reply.body)) }
                    pending.append(.response(response))
                    return pending.removeFirst()
                }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(upstream: upstream.makeAsyncIterator()) }
}
