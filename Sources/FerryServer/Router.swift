#if canImport(Glibc)
import Glibc
#endif
import FerryProtocol

/// An operation the daemon serves. `start` runs on the loop thread; it answers through the request at once or
/// later (setting `onCancel` to stop its work when it answers later).
public protocol OperationHandler: AnyObject {
    var descriptor: OperationDescriptor { get }
    func start(_ request: RequestContext)
}

/// Maps operation names to handlers, each with its counters, in registration order (the order `hello` lists).
final class Router {
    /// A class, not a struct: the fast path passes it around per request, and a struct of references costs a
    /// retain and a release of each on every copy.
    final class Entry {
        /// The operation's name (the descriptor's, read once: a descriptor is a struct of arrays, which the fast
        /// path copied, field by field, for every request it admitted).
        let name: String
        let handler: OperationHandler
        let counters = OperationCounters()
        /// The handler's fast path, when it has one.
        let hot: HotOperation?
        /// Whether the operation takes a request body (read once, as `name`): a body sent to one that does not is
        /// refused, not ignored.
        let takesBody: Bool

        init(name: String, handler: OperationHandler, hot: HotOperation?) {
            self.name = name
            self.handler = handler
            self.hot = hot
            takesBody = handler.descriptor.body.takesBody
        }
    }

    private var table: [String: Entry] = [:]
    /// Longer than any operation's name: a longer one is not looked up.
    static let maxNameBytes = 64
    private var names: [String] = []

    func register(_ handler: OperationHandler) {
        let name = handler.descriptor.name
        precondition(table[name] == nil, "operation \(name) registered twice")
        let entry = Entry(name: name, handler: handler, hot: hotPath ? handler as? HotOperation : nil)
        table[name] = entry
        names.append(name)
        if entry.hot != nil { hotEntries.append((Array(name.utf8), entry)) }
    }

    func entry(_ op: String) -> Entry? { table[op] }

    /// Whether operations with a fast path use it (`--no-hot-path` turns it off, to compare).
    var hotPath = true
    /// The few operations with a fast path, found by their name's bytes (cheaper than hashing a String).
    private var hotEntries: [(name: [UInt8], entry: Entry)] = []

    func hotEntry(_ op: UnsafeRawBufferPointer) -> Entry? {
        guard let opBase = op.baseAddress else { return nil }
        for i in hotEntries.indices where hotEntries[i].name.count == op.count {
            // memcmp: `elementsEqual` on raw buffers walks two iterators byte by byte.
            if hotEntries[i].name.withUnsafeBytes({ memcmp($0.baseAddress!, opBase, op.count) == 0 }) { return hotEntries[i].entry }
        }
        return nil
    }

    var counters: [(String, OperationCounters)] { names.map { ($0, table[$0]!.counters) } }
}
