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
        if entry.hot != nil, let hot = HotName(name, entry) {
            let grown = UnsafeMutableBufferPointer<HotName>.allocate(capacity: hotEntries.count + 1)
            _ = grown.initialize(fromContentsOf: hotEntries)
            (grown.baseAddress! + hotEntries.count).initialize(to: hot)
            hotEntries.deallocate()
            hotEntries = grown
        }
    }

    deinit { hotEntries.deallocate() }

    func entry(_ op: String) -> Entry? { table[op] }

    /// Whether operations with a fast path use it (`--no-hot-path` turns it off, to compare).
    var hotPath = true
    /// The few operations with a fast path, found by their name's bytes (cheaper than hashing a String). Plain
    /// values in a buffer of their own, the entries unmanaged (`table` keeps them): a lookup retains nothing,
    /// where an array of (name, entry) pairs cost three retains and two releases a request (callgrind).
    private var hotEntries = UnsafeMutableBufferPointer<HotName>(start: nil, count: 0)

    /// A hot operation's name as two words (names of up to 16 bytes; a longer one has no fast path).
    struct HotName {
        let words: (UInt64, UInt64)
        let count: Int
        let entry: Unmanaged<Entry>

        init?(_ name: String, _ entry: Entry) {
            let bytes = Array(name.utf8)
            guard let words = bytes.withUnsafeBytes(HotName.words) else { return nil }
            (self.words, count, self.entry) = (words, bytes.count, Unmanaged.passUnretained(entry))
        }

        /// Up to 16 bytes, zero-padded, as two words.
        static func words(_ bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64)? {
            guard bytes.count <= 16 else { return nil }
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) }
            return words
        }
    }

    /// The entry of the hot operation named `op`, unretained (valid while the router is: for the daemon's life).
    func hotEntry(_ op: UnsafeRawBufferPointer) -> Unmanaged<Entry>? {
        guard let words = HotName.words(op) else { return nil }
        for hot in hotEntries where hot.count == op.count && hot.words == words { return hot.entry }
        return nil
    }

    var counters: [(String, OperationCounters)] { names.map { ($0, table[$0]!.counters) } }
}
