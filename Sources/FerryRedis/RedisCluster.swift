import FerryLoop

/// Redis Cluster as one `RedisConnection`: a `RedisClient` per master, each command sent to the master of its key's
/// slot (`ClusterSlots`), the slot table read with `CLUSTER SLOTS` from the seeds and then from any node, `MOVED`
/// (the table is corrected and read again, the command sent on) and `ASK` (the command sent once to the importing
/// node, after `ASKING`) followed up to `maxRedirects` times. A master that goes away answers `unavailable` at once
/// (its client is down) while the table is read again every `refreshMs` until the cluster names a master that
/// answers (a failover promoted its replica). Subscriptions live on one more connection, to any node (Redis
/// carries every `PUBLISH` to the whole cluster), moved to another node when theirs is lost. Loop thread only.
///
/// ```swift
/// let cluster = RedisCluster(loop: loop, seeds: [.tcp(host: "10.0.0.5", port: 7000)], timeoutMs: 50)
/// cluster.start()
/// cluster.send([Array("GET".utf8), Array("ferry:v1:{GET https://a.test/x}".utf8)]) { reply in … }
/// ```
public final class RedisCluster: RedisConnection {
    public let seeds: [RedisEndpoint]
    public let timeoutMs: Int64
    public let setup: [[String]]
    private let loop: EventLoop
    private(set) public var slots = ClusterSlots()
    /// Connections by node (`host:port`): the masters of the table, and seeds while the table is read.
    private var clients: [String: RedisClient] = [:]
    private var subscriber: RedisClient?
    private var channels: [(name: String, onMessage: ([UInt8]) -> Void)] = []
    private var refreshing = false
    private var refreshTimer: LoopTimer?
    private var closed = false
    private var ownCounters = RedisCounters()
    public var onChange: (String) -> Void = { _ in }
    public var onLost: () -> Void = {}
    static let maxRedirects = 5
    static let refreshMs: UInt64 = 500

    public init(loop: EventLoop, seeds: [RedisEndpoint], timeoutMs: Int64 = 100, setup: [[String]] = []) {
        self.loop = loop
        self.seeds = seeds
        self.timeoutMs = timeoutMs
        self.setup = setup
    }

    public var description: String { "cluster " + seeds.map(\.description).joined(separator: ",") }

    /// The table is known and some master answers (a command for a master that is down is still `unavailable`).
    public var isConnected: Bool {
        slots.isComplete && slots.nodes.contains { clients[$0]?.isConnected == true }
    }

    public var counters: RedisCounters {
        var sum = ownCounters
        for client in Array(clients.values) + (subscriber.map { [$0] } ?? []) {
            let c = client.counters
            sum.commands += c.commands
            sum.unavailable += c.unavailable
            sum.timeouts += c.timeouts
            sum.connections += c.connections
            sum.messages += c.messages
            sum.failures += c.failures
        }
        return sum
    }

    public func start() {
        for seed in seeds { _ = client(for: seed.description, seed) }
    }

    public func close() {
        closed = true
        refreshTimer?.close()
        refreshTimer = nil
        for client in clients.values { client.close() }
        clients = [:]
        subscriber?.close()
        subscriber = nil
    }

    // MARK: Commands

    public func send(_ args: [[UInt8]], _ done: @escaping (RedisReply) -> Void) { send(args, redirects: 0, done) }

    private func send(_ args: [[UInt8]], redirects: Int, _ done: @escaping (RedisReply) -> Void) {
        let target: RedisClient?
        if let key = ClusterSlots.routingKey(args) {
            target = slots.node(forSlot: ClusterSlots.slot(of: key)).flatMap { clients[$0] }
        } else {
            target = slots.nodes.lazy.compactMap { self.clients[$0] }.first { $0.isConnected }
        }
        guard let target else {
            ownCounters.unavailable += 1
            scheduleRefresh()
            return done(.unavailable("no master of the Redis cluster serves this key now"))
        }
        target.send(args) { [self] reply in
            guard case .error(let message) = reply else {
                if case .unavailable = reply { scheduleRefresh() }
                return done(reply)
            }
            if message.hasPrefix("CLUSTERDOWN") || message.hasPrefix("TRYAGAIN") { scheduleRefresh() }
            guard let redirection = ClusterSlots.redirection(message), redirects < RedisCluster.maxRedirects else { return done(reply) }
            ownCounters.redirections += 1
            switch redirection {
            case .moved(let slot, let node):
                slots.assign(slot: slot, to: node)
                refresh()
                guard let endpoint = ClusterSlots.endpoint(node), client(for: node, endpoint).isConnected else {
                    return done(.unavailable("the slot moved to \(node), not connected yet"))
                }
                send(args, redirects: redirects + 1, done)
            case .ask(_, let node):
                guard let endpoint = ClusterSlots.endpoint(node) else { return done(reply) }
                let importing = client(for: node, endpoint)
                importing.send([Array("ASKING".utf8)]) { _ in }
                importing.send(args) { reply in done(reply) }
            }
        }
    }

    /// The connection to `node`, made (and started) the first time.
    private func client(for node: String, _ endpoint: RedisEndpoint) -> RedisClient {
        if let known = clients[node] { return known }
        let made = RedisClient(loop: loop, endpoint: endpoint, timeoutMs: timeoutMs, setup: setup)
        made.onChange = { [unowned self] line in onChange(line) }
        made.onConnected = { [unowned self] in if !slots.isComplete || refreshTimer != nil { refresh() } }
        made.onLost = { [unowned self] in
            scheduleRefresh()
            onLost()
        }
        clients[node] = made
        made.start()
        return made
    }

    // MARK: The slot table

    /// Reads `CLUSTER SLOTS` from a connected node (a master of the table first, else a seed).
    private func refresh() {
        guard !refreshing, !closed else { return }
        let candidates = slots.nodes + seeds.map(\.description) + Array(clients.keys)
        guard let node = candidates.first(where: { clients[$0]?.isConnected == true }), let asked = clients[node] else {
            return scheduleRefresh()
        }
        refreshing = true
        asked.send([Array("CLUSTER".utf8), Array("SLOTS".utf8)]) { [self] reply in
            refreshing = false
            guard !closed else { return }
            var table = ClusterSlots()
            let host = ClusterSlots.endpoint(node).map { if case .tcp(let h, _) = $0 { return h } else { return "" } } ?? ""
            guard table.load(reply, askedHost: host), table.isComplete else { return scheduleRefresh() }
            if table != slots { onChange("Redis cluster: \(table.nodes.count) masters, \(table.nodes.joined(separator: " "))") }
            adopt(table)
        }
    }

    /// Takes a new table: connections to its masters, none to nodes it no longer names (seeds kept until a master
    /// answers), the subscription on a node that answers.
    private func adopt(_ table: ClusterSlots) {
        slots = table
        let masters = Set(table.nodes)
        for node in masters { if let endpoint = ClusterSlots.endpoint(node) { _ = client(for: node, endpoint) } }
        for (node, client) in clients where !masters.contains(node) {
            client.close()
            clients[node] = nil
        }
        if masters.allSatisfy({ clients[$0]?.isConnected == true }) {
            refreshTimer?.close()
            refreshTimer = nil
        } else {
            scheduleRefresh()
        }
        placeSubscriber()
    }

    /// Reads the table again soon (at most one read per `refreshMs`) while a master is missing.
    private func scheduleRefresh() {
        guard !closed, refreshTimer == nil else { return }
        let timer = LoopTimer(loop: loop) { [unowned self] timer in
            timer.close()
            refreshTimer = nil
            refresh()
        }
        refreshTimer = timer
        timer.start(afterMs: RedisCluster.refreshMs)
    }

    // MARK: Subscriptions

    public func subscribe(_ channel: String, _ onMessage: @escaping ([UInt8]) -> Void) {
        channels.append((channel, onMessage))
        if let subscriber { subscriber.subscribe(channel, onMessage) } else { placeSubscriber() }
    }

    /// One connection listens for the cluster's messages, on a master of the table.
    private func placeSubscriber() {
        guard subscriber == nil, !channels.isEmpty, !closed,
              let node = slots.nodes.first(where: { clients[$0]?.isConnected == true }), let endpoint = ClusterSlots.endpoint(node) else { return }
        let listener = RedisClient(loop: loop, endpoint: endpoint, timeoutMs: timeoutMs, setup: setup)
        for (name, onMessage) in channels { listener.subscribe(name, onMessage) }
        listener.onLost = { [unowned self, unowned listener] in
            // Messages published meanwhile are lost to this daemon: what waited for one learns it now.
            if subscriber === listener {
                subscriber = nil
                listener.close()
                scheduleRefresh()
            }
            onLost()
        }
        subscriber = listener
        listener.start()
    }
}
