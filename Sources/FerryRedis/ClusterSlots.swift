/// Redis Cluster's routing, as pure functions and a table (the cluster specification, "Keys distribution model" and
/// "Redirection and resharding"): a key's hash slot (CRC16 of its hash tag, modulo 16384), the key of a command,
/// the slot table read from `CLUSTER SLOTS`, and the `MOVED` / `ASK` redirections. This is the only cluster logic
/// Ferry writes; `RedisCluster` runs it over one `RedisClient` per master.
///
/// ```swift
/// ClusterSlots.slot(of: Array("{GET https://a.test/x}lease".utf8))   // the slot of "GET https://a.test/x"
/// var table = ClusterSlots()
/// table.load(reply, askedHost: "127.0.0.1")                          // a CLUSTER SLOTS reply
/// table.node(forSlot: 12182)                                         // "127.0.0.1:7002"
/// ClusterSlots.redirection("MOVED 3999 127.0.0.1:6381")              // .moved(slot: 3999, node: "127.0.0.1:6381")
/// ```
public struct ClusterSlots: Equatable, Sendable {
    public static let count = 16384

    /// Each slot's master, as `host:port` (nil: not served, or not known yet).
    private var owners = [String?](repeating: nil, count: ClusterSlots.count)

    public init() {}

    /// Every slot has a master. Kept with `nodes` when the table changes: both are asked for every command
    /// (`RedisCluster.isConnected`), and working them out is a pass over 16384 slots.
    public private(set) var isComplete = false
    /// The masters named in the table, sorted.
    public private(set) var nodes: [String] = []

    private mutating func summarize() {
        isComplete = !owners.contains(nil)
        nodes = Array(Set(owners.compactMap { $0 })).sorted()
    }

    public func node(forSlot slot: Int) -> String? { owners[slot] }

    /// One slot moved (`MOVED`): its new master until the table is read again.
    public mutating func assign(slot: Int, to node: String) {
        guard (0..<ClusterSlots.count).contains(slot) else { return }
        owners[slot] = node
        summarize()
    }

    /// Replaces the table with a `CLUSTER SLOTS` reply: `[[start, end, [host, port, id…], replicas…]…]`. An
    /// empty host means the node that was asked (`askedHost`). False, and the table unchanged, for a reply of
    /// another shape.
    @discardableResult
    public mutating func load(_ reply: RedisReply, askedHost: String) -> Bool {
        guard case .array(let ranges) = reply else { return false }
        var fresh = [String?](repeating: nil, count: ClusterSlots.count)
        for range in ranges {
            guard case .array(let parts) = range, parts.count >= 3, case .integer(let start) = parts[0],
                  case .integer(let end) = parts[1], case .array(let master) = parts[2], master.count >= 2,
                  case .integer(let port) = master[1], 0 <= start, start <= end, end < ClusterSlots.count else { return false }
            var host = askedHost
            if case .string(let h) = master[0], !h.isEmpty { host = String(decoding: h, as: UTF8.self) }
            let node = "\(host):\(port)"
            for slot in Int(start)...Int(end) { fresh[slot] = node }
        }
        owners = fresh
        summarize()
        return true
    }

    // MARK: Keys

    /// The hash slot of a key: of the part between its first `{` and the next `}` when that part is not empty
    /// (its hash tag), else of the whole key.
    public static func slot(of key: [UInt8]) -> Int {
        var hashed = key[...]
        if let open = key.firstIndex(of: UInt8(ascii: "{")),
           let close = key[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
            hashed = key[(open + 1)..<close]
        }
        return Int(crc16(hashed) & 0x3FFF)
    }

    /// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the cluster's key hash.
    static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }

    /// The key a command is routed by: the first argument of the key commands Ferry sends, the first key of a
    /// script; nil for a command that names no key (`PUBLISH`: any node carries it to the whole cluster).
    public static func routingKey(_ args: [[UInt8]]) -> [UInt8]? {
        guard let name = args.first.map({ String(decoding: $0, as: UTF8.self).uppercased() }) else { return nil }
        switch name {
        case "EVAL", "EVALSHA":
            guard args.count > 3, let n = Int(String(decoding: args[2], as: UTF8.self)), n >= 1 else { return nil }
            return args[3]
        case "PUBLISH", "PING", "CLUSTER", "ASKING", "AUTH", "SELECT", "SUBSCRIBE", "INFO":
            return nil
        default:
            return args.count > 1 ? args[1] : nil
        }
    }

    // MARK: Redirections

    public enum Redirection: Equatable, Sendable {
        /// The slot lives on `node` now: update the table and send there.
        case moved(slot: Int, node: String)
        /// The slot is migrating: send this one command to `node`, after `ASKING`.
        case ask(slot: Int, node: String)
    }

    /// `MOVED <slot> <host>:<port>` or `ASK <slot> <host>:<port>` (an empty host, `:port`, is not resolved here).
    public static func redirection(_ error: String) -> Redirection? {
        let words = error.split(separator: " ")
        guard words.count == 3, let slot = Int(words[1]), (0..<count).contains(slot), words[2].contains(":") else { return nil }
        switch words[0] {
        case "MOVED": return .moved(slot: slot, node: String(words[2]))
        case "ASK": return .ask(slot: slot, node: String(words[2]))
        default: return nil
        }
    }

    /// `host:port` as an endpoint (the last colon splits: IPv6 hosts keep theirs).
    public static func endpoint(_ node: String) -> RedisEndpoint? {
        guard let colon = node.lastIndex(of: ":"), let port = Int(node[node.index(after: colon)...]),
              (1...65535).contains(port), colon > node.startIndex else { return nil }
        return .tcp(host: String(node[..<colon]), port: port)
    }
}
