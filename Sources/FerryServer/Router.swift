import FerryProtocol

/// An operation the daemon serves. `start` runs on the loop thread; it answers through the request at once or
/// later (setting `onCancel` to stop its work when it answers later).
public protocol OperationHandler: AnyObject {
    var descriptor: OperationDescriptor { get }
    func start(_ request: RequestContext)
}

/// Maps operation names to handlers, each with its counters, in registration order (the order `hello` lists).
final class Router {
    struct Entry {
        let handler: OperationHandler
        let counters = OperationCounters()
    }

    private var table: [String: Entry] = [:]
    /// Longer than any operation's name: a longer one is not looked up.
    static let maxNameBytes = 64
    private var names: [String] = []

    func register(_ handler: OperationHandler) {
        let name = handler.descriptor.name
        precondition(table[name] == nil, "operation \(name) registered twice")
        table[name] = Entry(handler: handler)
        names.append(name)
    }

    func entry(_ op: String) -> Entry? { table[op] }

    var counters: [(String, OperationCounters)] { names.map { ($0, table[$0]!.counters) } }
}
