import FerryProtocol

/// `describe`: every operation this daemon serves, with its arguments and result fields.
final class DescribeOperation: OperationHandler {
    let descriptor = OperationCatalog.describe
    private let operations: JSONValue

    /// `served`: the descriptors of the operations registered, in the order `hello` lists them.
    init(served: [OperationDescriptor]) { operations = .array(served.map(\.json)) }

    func start(_ request: RequestContext) {
        request.succeed(["protocol": .int(ProtocolLimits.versions.max()!), "operations": operations])
    }
}
