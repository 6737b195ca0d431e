import FerryProtocol

/// Counters of one operation, kept in the router's table so counting costs no extra lookup.
final class OperationCounters {
    var requests: UInt64 = 0
    var errors: UInt64 = 0
    /// Errors by code (`ErrorCode.index`), for metrics by operation and code.
    var errorsByCode = [UInt64](repeating: 0, count: ErrorCode.allCases.count)
    var latency = LatencyHistogram()
}

/// The daemon's counters, as `stats` reports them. Touched only on the loop thread.
final class ServerStats {
    var connectionsOpen = 0
    var connectionsTotal: UInt64 = 0
    var connectionsRejected: UInt64 = 0
    var requestsTotal: UInt64 = 0
    var requestErrors: UInt64 = 0
    var bytesIn: UInt64 = 0
    var bytesOut: UInt64 = 0
    private(set) var errorsByCode = [UInt64](repeating: 0, count: ErrorCode.allCases.count)

    func countError(_ code: ErrorCode, op: OperationCounters?) {
        errorsByCode[code.index] += 1
        requestErrors += 1
        op?.errors += 1
        op?.errorsByCode[code.index] += 1
    }

    /// An error that belongs to no request (a broken frame header, a refused connection): counted by code only.
    func countConnectionError(_ code: ErrorCode) {
        errorsByCode[code.index] += 1
    }

    func json(pid: Int32, uptimeMs: UInt64, inFlight: Int, operations: [(String, OperationCounters)]) -> JSONObject {
        var ops = JSONObject()
        for (name, c) in operations {
            ops[name] = .object(["requests": .int(Int64(c.requests)), "errors": .int(Int64(c.errors))])
        }
        var errors = JSONObject()
        for code in ErrorCode.allCases where errorsByCode[code.index] > 0 {
            errors[code.rawValue] = .int(Int64(errorsByCode[code.index]))
        }
        return [
            "pid": .int(Int64(pid)),
            "version": .string(ferryVersion),
            "uptime_ms": .int(Int64(uptimeMs)),
            "connections": ["open": .int(Int64(connectionsOpen)), "total": .int(Int64(connectionsTotal)),
                            "rejected": .int(Int64(connectionsRejected))],
            "requests": ["total": .int(Int64(requestsTotal)), "in_flight": .int(Int64(inFlight)),
                         "errors": .int(Int64(requestErrors))],
            "bytes": ["in": .int(Int64(bytesIn)), "out": .int(Int64(bytesOut))],
            "ops": .object(ops),
            "errors": .object(errors),
        ]
    }
}

/// What one uid's connections did: requests and bytes each way (a shared daemon's per-user accounting).
struct UIDUsage {
    var requests: UInt64 = 0
    var bytesIn: UInt64 = 0
    var bytesOut: UInt64 = 0
    var connections: UInt64 = 1

    mutating func add(_ other: UIDUsage) {
        requests += other.requests
        bytesIn += other.bytesIn
        bytesOut += other.bytesOut
        connections += other.connections
    }
}
