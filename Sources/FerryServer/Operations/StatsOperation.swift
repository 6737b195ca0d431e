import FerryProtocol

/// `stats`: the daemon's counters.
final class StatsOperation: OperationHandler {
    let descriptor = OperationCatalog.descriptor(named: "stats")!

    func start(_ request: RequestContext) {
        guard let server = request.server else { return }
        request.succeed(server.statsJSON())
    }
}
