import CFerryRedis
import FerryLoop

/// One connection to Redis on the daemon's loop (hiredis, asynchronous, through its libuv adapter): commands in,
/// replies out in order, each within a bounded time. Redis being down, slow or restarted never stalls a caller:
/// while the link is down a command is answered `unavailable` at once, a command that outlives `timeoutMs` is
/// answered `unavailable` then (its late reply dropped), and the link reconnects by itself (`RedisLink`). Loop
/// thread only.
///
/// ```swift
/// let redis = RedisClient(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 6379), timeoutMs: 50)
/// redis.start()
/// redis.send(["SET", "k", "v", "PX", "60000"]) { reply in … }   // .status("OK")
/// redis.send(["GET", "k"]) { reply in … }                         // .string(Array("v".utf8))
/// ```
public final class RedisClient: RedisConnection {
    public let endpoint: RedisEndpoint
    public let timeoutMs: Int64
    private let loop: EventLoop
    private let now: () -> Int64
    private var link = RedisLink()
    private var handle: OpaquePointer?
    private var nextToken: UInt64 = 0
    /// Commands waiting for their reply, by token; `order` holds them oldest first with their deadlines (replies
    /// and deadlines come in that order on one connection, so only the head is ever checked).
    private var pending: [UInt64: (RedisReply) -> Void] = [:]
    private var order: [(token: UInt64, deadline: Int64)] = []
    private var orderHead = 0
    /// Channels this connection listens on (`subscribe`), and the token each subscription's messages come with now.
    private var channels: [(name: String, onMessage: ([UInt8]) -> Void)] = []
    private var subscriptionTokens: [UInt64: Int] = [:]
    private var deadlineTimer: LoopTimer?
    private var retryTimer: LoopTimer?
    /// Counters for `stats`.
    public private(set) var counters = RedisCounters()
    /// Told of each change of the link (for the log): connected, or down and why.
    public var onChange: (String) -> Void = { _ in }
    /// Called when an open connection is lost or a connection attempt fails (not at `close`): what waited on this
    /// connection for news (a subscription's message) will not get it.
    public var onLost: () -> Void = {}
    /// Called when a connection is made (after its setup commands are sent).
    public var onConnected: () -> Void = {}
    public var description: String { endpoint.description }

    /// Sent first on every connection, before anything else (`AUTH`, `SELECT`): a refusal drops the connection,
    /// which is then tried again as a lost one.
    public let setup: [[String]]

    public init(loop: EventLoop, endpoint: RedisEndpoint, timeoutMs: Int64 = 100, setup: [[String]] = [],
                now: @escaping () -> Int64 = WallClock.nowMs) {
        self.loop = loop
        self.endpoint = endpoint
        self.timeoutMs = timeoutMs
        self.setup = setup
        self.now = now
    }

    public var isConnected: Bool { link.isConnected }
    public var state: RedisLink.State { link.state }

    public func start() { perform(link.decide(.start, now: now())) }

    /// Closes the connection; waiting commands are answered `unavailable`.
    public func close() {
        perform(link.decide(.close, now: now()))
        retryTimer?.close()
        retryTimer = nil
        deadlineTimer?.close()
        deadlineTimer = nil
    }

    public func send(_ args: [String], _ done: @escaping (RedisReply) -> Void) { send(args.map { Array($0.utf8) }, done) }

    /// Sends a command (its arguments as bytes: binary-safe); `done` runs once, on the loop thread.
    public func send(_ args: [[UInt8]], _ done: @escaping (RedisReply) -> Void) {
        counters.commands += 1
        guard link.isConnected, let handle, !args.isEmpty else {
            counters.unavailable += 1
            return done(.unavailable("Redis at \(endpoint) is not connected"))
        }
        nextToken += 1
        let token = nextToken
        let queued: Int32 = withArgv(args) { argv, lens in ferry_redis_command(handle, Int32(args.count), argv, lens, token) }
        guard queued == 0 else {
            counters.unavailable += 1
            return done(.unavailable("Redis at \(endpoint) refused the command"))
        }
        pending[token] = done
        order.append((token, now() + timeoutMs))
        armDeadline()
    }

    /// Listens on `channel` (this connection then serves only subscriptions: Redis's rule for a subscribed
    /// connection). Each message's payload goes to `onMessage`; after a reconnection the subscription is made again.
    ///
    /// ```swift
    /// let listener = RedisClient(loop: loop, endpoint: endpoint)
    /// listener.subscribe("ferry:v1:invalidate") { payload in … }
    /// listener.start()
    /// ```
    public func subscribe(_ channel: String, _ onMessage: @escaping ([UInt8]) -> Void) {
        channels.append((channel, onMessage))
        if link.isConnected { sendSubscribe(channels.count - 1) }
    }

    private func sendSubscribe(_ index: Int) {
        guard let handle else { return }
        nextToken += 1
        let token = nextToken
        let args = [Array("SUBSCRIBE".utf8), Array(channels[index].name.utf8)]
        let queued: Int32 = withArgv(args) { argv, lens in ferry_redis_command(handle, 2, argv, lens, token) }
        if queued == 0 { subscriptionTokens[token] = index }
    }

    /// A reply of a subscription: its confirmation, then `["message", channel, payload]` for each message.
    private func subscriptionReply(_ index: Int, _ reply: RedisReply) {
        guard case .array(let parts) = reply, parts.count == 3, parts[0] == .string(Array("message".utf8)),
              case .string(let payload) = parts[2] else { return }
        counters.messages += 1
        channels[index].onMessage(payload)
    }

    // MARK: The link

    private func perform(_ actions: [RedisLink.Action]) {
        for action in actions {
            switch action {
            case .connect: connect()
            case .failPending: failAll("the connection to Redis at \(endpoint) is down")
            case .retry(let ms):
                if retryTimer == nil { retryTimer = LoopTimer(loop: loop) { [unowned self] _ in perform(link.decide(.retryDue, now: now())) } }
                retryTimer?.start(afterMs: UInt64(max(1, ms)))
            case .disconnect:
                if let handle { ferry_redis_close(handle) }
                handle = nil
            }
        }
    }

    private func connect() {
        var error = [CChar](repeating: 0, count: 256)
        let owner = Unmanaged.passUnretained(self).toOpaque()
        let made: OpaquePointer?
        switch endpoint {
        case .tcp(let host, let port):
            made = ferry_redis_connect(loop.opaque, host, Int32(port), nil, RedisClient.eventCallback, RedisClient.replyCallback, owner, &error, error.count)
        case .unix(let path):
            made = ferry_redis_connect(loop.opaque, nil, 0, path, RedisClient.eventCallback, RedisClient.replyCallback, owner, &error, error.count)
        }
        guard let made else { return linkEvent(.failed, String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
        handle = made
    }

    private func linkEvent(_ event: RedisLink.Event, _ message: String?) {
        switch event {
        case .connected:
            counters.connections += 1
            onChange("connected to Redis at \(endpoint)")
            subscriptionTokens.removeAll()
        case .failed, .lost:
            handle = nil
            guard link.state != .closed else { break }   // our own close
            counters.failures += 1
            if link.state == .connected || link.failures == 0 {
                onChange("Redis at \(endpoint) is down: \(message ?? "connection closed"); serving without it, retrying")
            }
            onLost()
        default: break
        }
        perform(link.decide(event, now: now()))
        guard event == .connected else { return }
        // Commands run in order on one connection: the setup before anything sent after it.
        for command in setup {
            send(command) { [weak self] reply in
                guard let self, case .error(let message) = reply else { return }
                onChange("Redis at \(endpoint) refused \(command.first ?? "") (\(message)); dropping the connection")
                if let handle { ferry_redis_close(handle) }
            }
        }
        // Subscriptions are the connection's: made again on each new one.
        for index in channels.indices { sendSubscribe(index) }
        onConnected()
    }

    // MARK: Replies and deadlines

    private func answer(_ token: UInt64, _ reply: RedisReply) {
        if let index = subscriptionTokens[token] { return subscriptionReply(index, reply) }
        guard let done = pending.removeValue(forKey: token) else { return }  // timed out already
        if case .unavailable = reply { counters.unavailable += 1 }
        done(reply)
        dropAnsweredHead()
    }

    private func failAll(_ why: String) {
        let waiting = pending
        pending.removeAll()
        order.removeAll()
        orderHead = 0
        for (_, done) in waiting.sorted(by: { $0.key < $1.key }) {
            counters.unavailable += 1
            done(.unavailable(why))
        }
    }

    private func dropAnsweredHead() {
        while orderHead < order.count, pending[order[orderHead].token] == nil { orderHead += 1 }
        if orderHead > 64 && orderHead * 2 > order.count {
            order.removeFirst(orderHead)
            orderHead = 0
        }
    }

    private func armDeadline() {
        guard orderHead < order.count else { return }
        if deadlineTimer == nil { deadlineTimer = LoopTimer(loop: loop) { [unowned self] _ in expire() } }
        deadlineTimer?.start(afterMs: UInt64(max(1, order[orderHead].deadline - now())))
    }

    private func expire() {
        let t = now()
        while orderHead < order.count, order[orderHead].deadline <= t {
            let token = order[orderHead].token
            orderHead += 1
            if let done = pending.removeValue(forKey: token) {
                counters.timeouts += 1
                counters.unavailable += 1
                done(.unavailable("Redis at \(endpoint) did not answer within \(timeoutMs) ms"))
            }
        }
        dropAnsweredHead()
        armDeadline()
    }

    // MARK: C callbacks

    private static let eventCallback: ferry_redis_event_cb = { owner, event, message in
        let me = Unmanaged<RedisClient>.fromOpaque(owner!).takeUnretainedValue()
        let text = message.map { String(cString: $0) }
        switch Int32(event) {
        case Int32(FERRY_REDIS_CONNECTED): me.linkEvent(.connected, nil)
        case Int32(FERRY_REDIS_CONNECT_FAILED): me.linkEvent(.failed, text)
        default: me.linkEvent(.lost, text)
        }
    }

    private static let replyCallback: ferry_redis_reply_cb = { owner, token, value in
        let me = Unmanaged<RedisClient>.fromOpaque(owner!).takeUnretainedValue()
        guard let value else { return me.answer(token, .unavailable("the connection to Redis at \(me.endpoint) was lost")) }
        me.answer(token, RedisClient.reply(value.pointee))
    }

    static func reply(_ v: ferry_redis_value) -> RedisReply {
        func bytes() -> [UInt8] {
            guard let str = v.str, v.len > 0 else { return [] }
            return Array(UnsafeRawBufferPointer(start: str, count: v.len))
        }
        switch Int32(v.kind) {
        case Int32(FERRY_REDIS_STRING): return .string(bytes())
        case Int32(FERRY_REDIS_STATUS): return .status(String(decoding: bytes(), as: UTF8.self))
        case Int32(FERRY_REDIS_INTEGER): return .integer(v.integer)
        case Int32(FERRY_REDIS_ERROR): return .error(String(decoding: bytes(), as: UTF8.self))
        case Int32(FERRY_REDIS_ARRAY):
            return .array((0..<v.elements).map { reply(v.element![$0]) })
        default: return .nil
        }
    }

    /// The arguments as C's argv and lengths, valid during `body`.
    private func withArgv<R>(_ args: [[UInt8]], _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> R) -> R {
        let copies = args.map { arg -> UnsafeMutablePointer<CChar> in
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, arg.count))
            arg.withUnsafeBufferPointer { b in if let base = b.baseAddress { UnsafeMutableRawPointer(p).copyMemory(from: base, byteCount: arg.count) } }
            return p
        }
        defer { copies.forEach { $0.deallocate() } }
        var argv: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) }
        let lens = args.map(\.count)
        return argv.withUnsafeMutableBufferPointer { a in lens.withUnsafeBufferPointer { l in body(a.baseAddress!, l.baseAddress!) } }
    }
}

/// What a `RedisClient` has done, for `stats` and metrics.
public struct RedisCounters: Equatable, Sendable {
    public init() {}
    public var commands: UInt64 = 0
    /// Commands answered `unavailable` (down, timed out, lost).
    public var unavailable: UInt64 = 0
    public var timeouts: UInt64 = 0
    public var connections: UInt64 = 0
    /// Messages received on subscriptions.
    public var messages: UInt64 = 0
    public var failures: UInt64 = 0
    /// Cluster redirections followed (`MOVED`, `ASK`): `RedisCluster` only.
    public var redirections: UInt64 = 0
}
