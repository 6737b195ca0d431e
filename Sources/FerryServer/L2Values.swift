import FerryBytes
import FerryCache
import FerryLoop
import FerryRedis
import FerryStore

/// The `cache.*` namespaces a fleet shares (`--l2-namespaces`) in Redis: the store's `RemoteTier`. A value lives
/// under `<prefix>v:<namespace>:<key>` with a small header (its creation and expiry times); its time to live in
/// Redis is the value's own, or `--l2-idle-ttl` for a value without one, pushed back on every read, so what is used
/// stays and what is not goes (sccache #1666). Every change is written behind the reply and announced on
/// `<prefix>values`; the other machines drop their copies, and read Redis next. A namespace cleared on one machine
/// is cleared on all: the time of the clear is kept in Redis (`<prefix>vclear:<namespace>`, read with each value),
/// and values created before it are misses. Loop thread only.
///
/// ```swift
/// store.remote = L2Values(redis: client, listener: listener, prefix: "ferry:v1:", namespaces: ["builds"], store: store)
/// ```
final class L2Values: RemoteTier {
    let redis: RedisConnection
    let prefix: String
    let namespaces: Set<String>
    let idleTtlMs: Int64
    let maxValueBytes: Int
    private unowned let store: CacheStore
    private(set) var counters = L2ValueCounters()
    private let node = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    private var writesInFlight = 0
    var channel: String { prefix + "values" }

    init(redis: RedisConnection, listener: RedisConnection?, prefix: String, namespaces: Set<String>, idleTtlMs: Int64,
         maxValueBytes: Int, store: CacheStore) {
        self.redis = redis
        self.prefix = prefix
        self.namespaces = namespaces
        self.idleTtlMs = idleTtlMs
        self.maxValueBytes = maxValueBytes
        self.store = store
        listener?.subscribe(channel) { [unowned self] payload in heard(payload) }
    }

    func shares(_ key: CacheKey) -> Bool { namespaces.contains(key.namespace) }
    func shares(namespace: String) -> Bool { namespaces.contains(namespace) }

    private func redisKey(_ key: CacheKey) -> [UInt8] { Array("\(prefix)v:\(key.namespace):".utf8) + Array(key.key.utf8) }
    private func clearKey(_ namespace: String) -> [UInt8] { Array("\(prefix)vclear:\(namespace)".utf8) }

    // MARK: Reading

    /// The value and the time its namespace was last cleared (two commands sent together; in a cluster they may
    /// go to two nodes): a value created before the clear is gone.
    func read(_ key: CacheKey, now: Int64, _ done: @escaping (CacheEntry?) -> Void) {
        guard redis.isConnected else { return done(nil) }
        var clearedAt: Int64?, value = RedisReply.nil, answers = 0
        func both() {
            answers += 1
            guard answers == 2 else { return }
            guard case .string(let bytes) = value, let entry = L2Values.decode(bytes), entry.createdAt > clearedAt ?? .min,
                  !entry.isExpired(now: now) else {
                counters.misses += 1
                return done(nil)
            }
            counters.hits += 1
            // In use: a value without an expiry of its own stays another idle period.
            if entry.expiresAt == nil { redis.send([Array("PEXPIRE".utf8), redisKey(key), Array(String(idleTtlMs).utf8)]) { _ in } }
            done(entry)
        }
        redis.send([Array("GET".utf8), clearKey(key.namespace)]) { reply in
            if case .string(let bytes) = reply { clearedAt = Int64(String(decoding: bytes, as: UTF8.self)) }
            both()
        }
        redis.send([Array("GET".utf8), redisKey(key)]) { reply in
            value = reply
            both()
        }
    }

    // MARK: Writing

    func write(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool, now: Int64, _ done: @escaping (Bool?) -> Void) {
        let ttl = entry.expiresAt.map { $0 - now } ?? idleTtlMs
        guard redis.isConnected, entry.value.count <= maxValueBytes, ttl > 0 else { return done(nil) }
        // Behind the reply, bounded as the responses' writes are: past the bound a write is dropped and counted
        // (an `ifAbsent` waits for its answer, so it is never dropped).
        guard ifAbsent || writesInFlight < L2Responses.maxWritesInFlight else {
            counters.dropped += 1
            return done(nil)
        }
        writesInFlight += 1
        var args = [Array("SET".utf8), redisKey(key), L2Values.encode(entry), Array("PX".utf8), Array(String(ttl).utf8)]
        if ifAbsent { args.append(Array("NX".utf8)) }
        redis.send(args) { [self] reply in
            writesInFlight -= 1
            switch reply {
            case .status:
                counters.writes += 1
                announce("d", key.namespace, key.key)
                done(true)
            case .nil:
                done(false)   // NX: a value is there
            default:
                counters.unavailable += 1
                done(nil)
            }
        }
    }

    func removed(_ key: CacheKey) {
        guard redis.isConnected else { return }
        redis.send([Array("DEL".utf8), redisKey(key)]) { _ in }
        announce("d", key.namespace, key.key)
    }

    func retimed(_ key: CacheKey, expiresAt: Int64?, now: Int64) {
        guard redis.isConnected else { return }
        let ttl = expiresAt.map { max(1, $0 - now) } ?? idleTtlMs
        // The header holds the expiry too: the value is rewritten with it (read, then set, in one script).
        let script = """
            local v = redis.call('GET', KEYS[1])
            if not v then return 0 end
            redis.call('SET', KEYS[1], string.sub(v, 1, 11) .. ARGV[1] .. string.sub(v, 20), 'PX', ARGV[2])
            return 1
            """
        var expiry: [UInt8] = []
        BigEndian.append(UInt64(bitPattern: expiresAt ?? -1), bytes: 8, to: &expiry)
        redis.send([Array("EVAL".utf8), Array(script.utf8), Array("1".utf8), redisKey(key), expiry, Array(String(ttl).utf8)]) { _ in }
        announce("d", key.namespace, key.key)
    }

    func cleared(namespace: String, now: Int64) {
        guard redis.isConnected else { return }
        redis.send([Array("SET".utf8), clearKey(namespace), Array(String(now).utf8)]) { _ in }
        announce("c", namespace, String(now))
    }

    // MARK: The fleet's news

    /// `node NUL op NUL namespace NUL key-or-time`.
    private func announce(_ op: String, _ namespace: String, _ what: String) {
        let payload = Array("\(node)\u{0}\(op)\u{0}\(namespace)\u{0}".utf8) + Array(what.utf8)
        redis.send([Array("PUBLISH".utf8), Array(channel.utf8), payload]) { _ in }
    }

    private func heard(_ payload: [UInt8]) {
        let parts = payload.split(separator: 0, maxSplits: 3, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard parts.count == 4, parts[0] != node, shares(namespace: parts[2]) else { return }
        counters.invalidationsReceived += 1
        let now = WallClock.nowMs()
        switch parts[1] {
        case "d": store.dropLocal(CacheKey(trusted: parts[2], parts[3]), now: now)
        case "c": store.clearLocal(namespace: parts[2], now: now)
        default: break
        }
    }

    // MARK: Encoding

    /// `FV1`, then creation and expiry (-1: none) as big-endian 64-bit integers, then the value.
    static func encode(_ entry: CacheEntry) -> [UInt8] {
        var out = Array("FV1".utf8)
        out.reserveCapacity(19 + entry.value.count)
        BigEndian.append(UInt64(bitPattern: entry.createdAt), bytes: 8, to: &out)
        BigEndian.append(UInt64(bitPattern: entry.expiresAt ?? -1), bytes: 8, to: &out)
        return out + entry.value
    }

    static func decode(_ bytes: [UInt8]) -> CacheEntry? {
        guard bytes.count >= 19, bytes.starts(with: Array("FV1".utf8)) else { return nil }
        let (created, expires) = bytes.withUnsafeBytes { raw in
            (Int64(bitPattern: BigEndian.load(raw, at: 3, bytes: 8)), Int64(bitPattern: BigEndian.load(raw, at: 11, bytes: 8)))
        }
        return CacheEntry(value: Array(bytes[19...]), createdAt: created, expiresAt: expires < 0 ? nil : expires)
    }
}

/// What the shared namespaces did in Redis, for `stats`' `l2.values`.
struct L2ValueCounters {
    var hits: UInt64 = 0
    var misses: UInt64 = 0
    var writes: UInt64 = 0
    var dropped: UInt64 = 0
    var unavailable: UInt64 = 0
    var invalidationsReceived: UInt64 = 0
}
