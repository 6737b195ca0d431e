import FerryImages
import FerryProtocol

/// `stats`: the daemon's counters.
final class StatsOperation: OperationHandler {
    let descriptor = OperationCatalog.stats
    private let report: StatsReport
    private let loader: ImageLoader?
    private let post: LoopPost

    init(report: StatsReport, loader: ImageLoader?, post: @escaping LoopPost) {
        self.report = report
        self.loader = loader
        self.post = post
    }

    func start(_ request: RequestContext) {
        guard let loader else { return request.succeed(report.json()) }
        // The loop's counters as of now (this request not counted in flight), then the image counters, which live
        // in the loader's actor; the answer goes out on the loop thread.
        let json = report.json()
        let post = self.post, bound = LoopBound(value: (request, json))
        Task {
            let images = await loader.snapshot()
            post {
                var json = bound.value.1
                json["image"] = .object(images.json(budget: images.budget, maxEntries: images.maxEntries))
                if case .object(var memory)? = json["memory"] {
                    memory["images"] = .int(Int64(images.bytes))
                    json["memory"] = .object(memory)
                }
                bound.value.0.succeed(json)
            }
        }
    }
}
