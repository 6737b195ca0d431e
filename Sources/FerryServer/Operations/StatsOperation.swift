import FerryProtocol

/// `stats`: the daemon's counters.
final class StatsOperation: OperationHandler {
    let descriptor = OperationCatalog.descriptor(named: "stats")!

    func start(_ request: RequestContext) {
        guard let server = request.server else { return }
        guard let loader = server.images else { return request.succeed(server.statsJSON()) }
        // The image counters live in the loader's actor: ask it, then answer on the loop thread.
        let post = server.post, bound = LoopBound(value: (request, server))
        Task {
            let images = await loader.snapshot()
            post {
                var json = bound.value.1.statsJSON()
                json["image"] = .object(images.json(budget: loader.config.memoryBudget, maxEntries: loader.config.maxEntries))
                bound.value.0.succeed(json)
            }
        }
    }
}
