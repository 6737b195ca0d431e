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
        var prometheus = false
        switch request.args["format"] {
        case nil, .null?, .string("json")?: break
        case .string("prometheus")?: prometheus = true
        default: return request.fail(.invalidArgument, "\"format\" is json (the default) or prometheus")
        }
        let bound = LoopBound(value: request)
        StatsOperation.collect(report: report, loader: loader, post: post) { [report] json in
            guard prometheus else { return bound.value.succeed(json) }
            bound.value.succeed(["format": "prometheus"], body: Array(MetricsReport.render(stats: json, operations: report.operations).utf8))
        }
    }

    /// The whole `stats` object: the loop's counters as of now (this request not counted in flight), then the image
    /// counters, which live in the loader's actor; `done` runs on the loop thread (at once without a loader).
    static func collect(report: StatsReport, loader: ImageLoader?, post: @escaping LoopPost, _ done: @escaping (JSONObject) -> Void) {
        let json = report.json()
        guard let loader else { return done(json) }
        // Two bounds, not one of a tuple: the optimiser (CopyPropagation, Swift 6.3.1) crashed on the tuple's closure.
        let boundJSON = LoopBound(value: json), boundDone = LoopBound(value: done)
        Task {
            let images = await loader.snapshot()
            post {
                var json = boundJSON.value
                json["image"] = .object(images.json(budget: images.budget, maxEntries: images.maxEntries))
                if case .object(var memory)? = json["memory"] {
                    memory["images"] = .int(Int64(images.bytes))
                    json["memory"] = .object(memory)
                }
                boundDone.value(json)
            }
        }
    }
}
