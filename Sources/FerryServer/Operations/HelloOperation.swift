import FerryProtocol

/// `hello`: picks the highest protocol version both sides speak and announces the daemon's limits.
final class HelloOperation: OperationHandler {
    let descriptor = OperationCatalog.hello
    private let limits: JSONValue
    private let operations: JSONValue
    private let log: Logger
    /// What the daemon offers beyond the version's core (`capabilities`): `body_fd` when it hands out descriptors.
    private let capabilities: JSONValue

    /// `served`: the names of the operations registered, in order; `bodyDescriptorMinBytes`: nil when the daemon
    /// hands out no descriptors, else the smallest body it hands out as one (announced in `limits`).
    init(limits: ProtocolLimits, served: [String], bodyDescriptorMinBytes: Int?, log: Logger) {
        var limitsJSON = limits.json
        if let min = bodyDescriptorMinBytes { limitsJSON["body_fd_min_bytes"] = .int(Int64(min)) }
        self.limits = .object(limitsJSON)
        capabilities = .array(bodyDescriptorMinBytes == nil ? [] : [.string(Capability.bodyFD.rawValue)])
        operations = .array(served.map { .string($0) })
        self.log = log
    }

    func start(_ request: RequestContext) {
        guard let connection = request.connection else { return }
        if connection.phase == .ready {
            return request.fail(.failedPrecondition, "hello was already sent on this connection")
        }
        guard let versions = request.args["versions"]?.arrayValue else {
            return request.fail(.invalidArgument, "\"versions\" must be an array of integers")
        }
        var offered: [Int64] = []
        for v in versions {
            guard case .int(let n) = v else {
                return request.fail(.invalidArgument, "\"versions\" must be an array of integers")
            }
            offered.append(n)
        }
        var clientName = ""
        if let c = request.args["client"] {
            guard let s = c.stringValue else { return request.fail(.invalidArgument, "\"client\" must be a string") }
            clientName = String(s.prefix(128))
        }
        guard let version = ProtocolLimits.versions.filter(offered.contains).max() else {
            return request.fail(.unimplemented,
                                "no common protocol version: the client speaks \(offered), ferryd speaks \(ProtocolLimits.versions)",
                                details: ["server_versions": .array(ProtocolLimits.versions.map { .int($0) })])
        }
        connection.didHandshake(clientName: clientName)
        log.debug("conn=\(connection.id) hello client=\(clientName) version=\(version)")
        request.succeed(["version": .int(version), "protocol": .string(ProtocolLimits.revision),
                         "server": .string("ferryd \(ferryVersion)"), "limits": limits,
                         "operations": operations, "capabilities": capabilities])
    }
}
