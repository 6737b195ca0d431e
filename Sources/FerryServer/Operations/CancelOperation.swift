import FerryProtocol

/// `cancel`: ends another request of the same connection with `cancelled`, stopping its work.
final class CancelOperation: OperationHandler {
    let descriptor = OperationCatalog.cancel

    func start(_ request: RequestContext) {
        guard case .int(let raw)? = request.args["id"], raw >= 1, UInt64(raw) <= RequestEnvelope.maxID else {
            return request.fail(.invalidArgument, "\"id\" must be the integer id of a request in flight")
        }
        let target = UInt64(raw)
        guard target != request.id, let connection = request.connection else { return request.succeed(["cancelled": false]) }
        guard let victim = connection.request(id: target) else {
            // Still sending its body (a download that streams), or still receiving one (an upload).
            let stopped = connection.cancelStream(target) || connection.cancelUpload(target)
            return request.succeed(["cancelled": .bool(stopped)])
        }
        victim.cancel(with: WireError(.cancelled, "cancelled by the client"))
        request.succeed(["cancelled": true])
    }
}
