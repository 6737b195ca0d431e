import FerryProtocol

/// `describe`: every operation this server serves, with its arguments and result fields.
final class DescribeOperation: OperationHandler {
    let descriptor = OperationCatalog.describe

    func start(_ request: RequestContext) {
        guard let server = request.server else { return }
        request.succeed([
            "protocol": .int(ProtocolLimits.versions.max()!),
            "operations": .array(server.router.descriptors.map(\.json)),
        ])
    }
}
