import FerryProtocol

/// `fetch`: an HTTP request made by the daemon on the client's behalf, through the shared HTTP cache
/// (`FetchJob` does the work; this checks the arguments).
final class FetchOperation: OperationHandler {
    let descriptor = OperationCatalog.fetch

    func start(_ request: RequestContext) {
        guard let server = request.server, let service = server.fetch else {
            return request.fail(.unavailable, "fetch is not available in this daemon")
        }
        switch FetchSpec.parse(request.args, body: request.body, maxBytesLimit: service.config.maxBytesLimit) {
        case .failure(let failure): request.fail(failure.wireError)
        case .success(let spec): FetchJob(responder: request, service: service, spec: spec).start()
        }
    }
}
