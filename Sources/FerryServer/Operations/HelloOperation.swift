import FerryProtocol

/// `hello`: picks the highest protocol version both sides speak and announces the server's limits.
final class HelloOperation: OperationHandler {
    let descriptor = OperationCatalog.hello

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
        let server = connection.server
        connection.didHandshake(clientName: clientName)
        server.log.debug("conn=\(connection.id) hello client=\(clientName) version=\(version)")
        request.succeed([
            "version": .int(version),
            "server": .string("ferryd \(ferryVersion)"),
            "limits": .object(server.config.limits.json),
            "operations": .array(server.router.names.map { .string($0) }),
        ])
    }
}
