/// Where a connection is in its life. Pure data: the transitions live in `RequestGate` and `Connection`.
public enum ConnectionPhase: Sendable, Equatable {
    /// Connected; only `hello` is accepted and frames are capped at the handshake size.
    case awaitingHello
    /// `hello` succeeded.
    case ready
    /// Closing after a protocol error or EOF: nothing more is read or answered.
    case closing
}

/// Decides what happens to a parsed request before any operation sees it. Pure, so each rule of PROTOCOL.md
/// section 4 is tested on its own.
public enum RequestGate {
    public enum Decision: Sendable, Equatable {
        case admit
        /// A call error: answer it, keep the connection.
        case reject(WireError)
        /// A protocol error: answer it, then close.
        case closeConnection(WireError)
    }

    public struct Situation: Sendable {
        public var phase: ConnectionPhase
        public var serverDraining: Bool
        public var idInFlight: Bool
        public var connectionInFlight: Int
        public var totalInFlight: Int
        public var maxConnectionInFlight: Int
        public var maxTotalInFlight: Int
        public var operationKnown: Bool

        public init(phase: ConnectionPhase, serverDraining: Bool = false, idInFlight: Bool = false,
                    connectionInFlight: Int = 0, totalInFlight: Int = 0, maxConnectionInFlight: Int = 256,
                    maxTotalInFlight: Int = 65536, operationKnown: Bool = true) {
            self.phase = phase
            self.serverDraining = serverDraining
            self.idInFlight = idInFlight
            self.connectionInFlight = connectionInFlight
            self.totalInFlight = totalInFlight
            self.maxConnectionInFlight = maxConnectionInFlight
            self.maxTotalInFlight = maxTotalInFlight
            self.operationKnown = operationKnown
        }
    }

    /// The rules, in the order they apply: a duplicate id breaks the stream whatever else is true, so it comes first.
    public static func decide(op: String, _ s: Situation) -> Decision {
        if s.idInFlight {
            return .closeConnection(WireError(.protocolError, "a request with this id is still in flight"))
        }
        if s.phase == .awaitingHello && op != OperationName.hello.rawValue {
            return .reject(WireError(.failedPrecondition, "send hello first"))
        }
        // Every rule below refuses: with none of them true, any operation is admitted, and the name is not compared
        // (a string comparison for every request, callgrind).
        guard s.serverDraining || !s.operationKnown || s.connectionInFlight >= s.maxConnectionInFlight
                || s.totalInFlight >= s.maxTotalInFlight else { return .admit }
        // `cancel` finishes at once and is how a client at a limit, or waiting on a drain, gets out of it.
        if op == OperationName.cancel.rawValue { return .admit }
        if s.serverDraining {
            return .reject(WireError(.unavailable, "ferryd is shutting down"))
        }
        if !s.operationKnown {
            let name = op.truncatedForMessages
            return .reject(WireError(.unimplemented, "unknown operation \"\(name)\"", details: ["op": .string(name)]))
        }
        if s.connectionInFlight >= s.maxConnectionInFlight {
            return .reject(WireError(.resourceExhausted, "more than \(s.maxConnectionInFlight) requests in flight on this connection"))
        }
        if s.totalInFlight >= s.maxTotalInFlight {
            return .reject(WireError(.resourceExhausted, "the server has \(s.maxTotalInFlight) requests in flight"))
        }
        return .admit
    }
}
