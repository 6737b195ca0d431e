import FerryProtocol

/// `stats`: the daemon's counters.
final class StatsOperation: OperationHandler {
    let descriptor = OperationCatalog.stats

    func start(_ request: RequestContext) {
        guard let server = request.server else { return }
        guard let loader = server.images else { return request.succeed(server.statsJSON()) }
        // The loop's counters as of now (this request not counted in flight), then the image counters, which live
        // in the loader's actor; the answer goes out on the loop thread.
        let json = server.statsJSON()
        let post = server.post, bound = LoopBound(value: (request, json))
        Task {
            let images = await loader.snapshot()
            post {
                var json = bound.value.1
                json["image"] = .object(images.json(budget: loader.config.memoryBudget, maxEntries: loader.config.maxEntries))
                bound.value.0.succeed(json)
            }
        }
    }
}
