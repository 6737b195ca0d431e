import FerryFetch
import FerryStore
import FerryLoop
import FerryRedis

/// The HTTP cache's storage with Redis behind it, shared by every ferryd of a fleet (`--l2`): reads go to this
/// machine's store first, then to Redis, and a Redis hit fills the local store; writes go to the local store and,
/// for what `SharedTier` lets out, to Redis behind the reply (a bounded number in flight; more are dropped and
/// counted), with the time to live the response is still worth. Redis down or slow never fails a request: its
/// answer is then a miss, within the client's timeout. Loop thread only.
///
/// ```swift
/// let storage = L2Responses(local: CacheStoreResponses(store: store), redis: client, prefix: "ferry:v1:")
/// ResponseStore(storage: storage)
/// ```
final class L2Responses: ResponseStorage {
    private let local: ResponseStorage
    let redis: RedisConnection
    /// Every key in Redis starts with it: a fleet's name and the format's version (`--l2-prefix`).
    let prefix: String
    let maxValueBytes: Int
    /// Credential partitions go to Redis too (`--l2-partition-secret`: every machine keys them with one secret).
    var sharesPartitions = false
    private(set) var counters = L2Counters()
    /// The fleet's coalescing of cold misses through this tier (set by `Wiring.startL2`).
    var leases: FleetLeases?
    /// The `cache.*` namespaces shared through this tier (`--l2-namespaces`), when any.
    var values: L2Values?
    /// The connection that listens for the fleet's invalidations (a subscribed connection serves nothing else).
    let listener: RedisConnection?
    /// This daemon's name in its invalidation messages, so it does not act on its own.
    private let node = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    var invalidationChannel: String { prefix + "invalidate" }
    private var writesInFlight = 0
    static let maxWritesInFlight = 1000

    init(local: ResponseStorage, redis: RedisConnection, listener: RedisConnection? = nil, prefix: String, maxValueBytes: Int = 1 << 20) {
        self.local = local
        self.redis = redis
        self.listener = listener
        self.prefix = prefix
        self.maxValueBytes = maxValueBytes
        // Another machine's purge or unsafe request: this machine's copy goes too.
        listener?.subscribe(invalidationChannel) { [unowned self] payload in received(invalidation: payload) }
    }

    /// `node NUL key`: drop the key here unless this daemon sent it.
    private func received(invalidation payload: [UInt8]) {
        guard let nul = payload.firstIndex(of: 0) else { return }
        guard String(decoding: payload[..<nul], as: UTF8.self) != node else { return }
        counters.invalidationsReceived += 1
        local.delete(String(decoding: payload[(nul + 1)...], as: UTF8.self))
    }

    /// A storage key's name in Redis: the prefix, then the key with its primary part (`GET <url>`, before the
    /// first NUL) as a Redis Cluster hash tag, so a response's record, its variants, its body and its lease live
    /// on one node (a script touches them together).
    func redisKey(_ key: String) -> [UInt8] {
        let primaryEnd = key.utf8.firstIndex(of: 0) ?? key.utf8.endIndex
        return Array(prefix.utf8) + [UInt8(ascii: "{")] + Array(key.utf8[..<primaryEnd]) + [UInt8(ascii: "}")]
            + Array(key.utf8[primaryEnd...])
    }

    /// The fleet's lease on fetching a primary key (`FleetLeases`), in its hash slot.
    func leaseKey(_ primary: String) -> [UInt8] { Array((prefix + "lease:{" + primary + "}").utf8) }

    /// Runs `next` once this machine's writes for `primary` are sent (Redis runs one connection's commands in
    /// order: what is sent after them finds them done).
    func whenWritten(_ primary: String, _ next: @escaping () -> Void) {
        if !writing.whenDone(primary, next) { next() }
    }

    func get(_ key: String, _ done: @escaping ([UInt8]?) -> Void) {
        local.get(key) { [self] value in
            if let value { return done(value) }
            guard SharedTier.isShareable(key: key, partitions: sharesPartitions), redis.isConnected else { return done(nil) }
            redis.send([Array("GET".utf8), redisKey(key)]) { [self] reply in
                switch reply {
                case .string(let bytes):
                    counters.hits += 1
                    local.put(key, bytes)   // this machine keeps it too
                    done(bytes)
                case .nil:
                    counters.misses += 1
                    done(nil)
                default:
                    counters.unavailable += 1
                    done(nil)
                }
            }
        }
    }

    func put(_ key: String, _ value: [UInt8]) {
        local.put(key, value)
        guard value.count <= maxValueBytes, redis.isConnected,
              let (ttl, apart) = SharedTier.sharing(key: key, record: value, now: WallClock.nowMs() / 1000,
                                                    partitions: sharesPartitions) else { return }
        guard let body = apart else { return set(key, value, ttlMs: ttl) }
        // The body first (read back from this machine's store, where its file was just adopted), then the record:
        // a machine that finds the record finds its body.
        guard body.size <= maxValueBytes else { return }
        let primary = L2Responses.primary(of: key)
        writing.begin(primary)
        local.getBody(body.key) { [self] found in
            defer { for next in writing.end(primary) { next() } }
            guard case .bytes(let bytes)? = found, bytes.count == body.size else { return }
            set(body.key, Array(bytes), ttlMs: ttl)
            set(key, value, ttlMs: ttl)
        }
    }

    /// `SET key value PX ttl`, behind the reply; dropped (and counted) past `maxWritesInFlight`.
    private func set(_ key: String, _ value: [UInt8], ttlMs: Int64) {
        guard writesInFlight < L2Responses.maxWritesInFlight else {
            counters.dropped += 1
            return
        }
        writesInFlight += 1
        redis.send([Array("SET".utf8), redisKey(key), value, Array("PX".utf8), Array(String(ttlMs).utf8)]) { [self] reply in
            writesInFlight -= 1
            if case .status = reply { counters.writes += 1 } else { counters.unavailable += 1 }
        }
    }

    /// Writes waiting for a body read, by primary key, with what runs once they are sent (`whenWritten`).
    private var writing = WorkByKey()

    static func primary(of key: String) -> String {
        String(decoding: key.utf8.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// Gone here, from Redis, and — published to the fleet — from every other machine's local store.
    func delete(_ key: String) {
        local.delete(key)
        guard redis.isConnected else { return }
        // A body goes with its record, which is what the fleet is told of.
        if SharedTier.isBody(key: key) { return redis.send([Array("DEL".utf8), redisKey(key)]) { _ in } }
        guard SharedTier.isShareable(key: key, partitions: sharesPartitions) else { return }
        redis.send([Array("DEL".utf8), redisKey(key)]) { _ in }
        redis.send([Array("PUBLISH".utf8), Array(invalidationChannel.utf8), Array(node.utf8) + [0] + Array(key.utf8)]) { [self] reply in
            if case .integer = reply { counters.invalidationsSent += 1 }
        }
    }

    func putBody(_ key: String, file: SpooledFile, _ done: @escaping (Bool) -> Void) { local.putBody(key, file: file, done) }
    /// A body stored apart: this machine's, else the fleet's (kept here as a value, like a record).
    func getBody(_ key: String, _ done: @escaping (FetchBody?) -> Void) {
        local.getBody(key) { [self] body in
            if let body { return done(body) }
            guard SharedTier.isBody(key: key), redis.isConnected else { return done(nil) }
            redis.send([Array("GET".utf8), redisKey(key)]) { [self] reply in
                guard case .string(let bytes) = reply else { return done(nil) }
                counters.bodyHits += 1
                local.put(key, bytes)
                done(.bytes(bytes[...]))
            }
        }
    }
    func peek(_ key: String, _ done: @escaping ([UInt8]?) -> Void) { local.peek(key, done) }
    func list(prefix: String, after: String?, limit: Int, _ done: @escaping (Result<StoredKeys, StoreError>) -> Void) {
        local.list(prefix: prefix, after: after, limit: limit, done)
    }
}

/// What the second tier did, for `stats`' `l2`.
struct L2Counters {
    var hits: UInt64 = 0
    var misses: UInt64 = 0
    /// Bodies stored apart read from Redis (their records count among `hits`).
    var bodyHits: UInt64 = 0
    var writes: UInt64 = 0
    /// Writes not sent: too many in flight.
    var dropped: UInt64 = 0
    /// Reads and writes Redis did not answer (down, timed out).
    var unavailable: UInt64 = 0
    /// Deletions published to the fleet, and those received from it.
    var invalidationsSent: UInt64 = 0
    var invalidationsReceived: UInt64 = 0
}
