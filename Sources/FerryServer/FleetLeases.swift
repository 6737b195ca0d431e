import FerryFetch
import FerryLoop
import FerryRedis

/// Coalescing of cold misses across the fleet, in Redis (`FleetCoalescing`): a daemon about to ask the origin for a
/// response nobody stored claims its key with a short lease (`SET NX PX`, in a script that also says whether the
/// response arrived meanwhile); the others wait for the holder's release, announced on the `<prefix>leases` channel,
/// then look again (a Redis hit). A holder renews its leases while its fetch runs; one that dies lets them expire,
/// and a waiter takes over. Redis down or slow: every claim is a fetch of its own at once. The lifecycle of each
/// claim is `LeaseClaim`'s; this class runs its actions. Loop thread only.
///
/// ```swift
/// let leases = FleetLeases(loop: loop, tier: l2, leaseMs: 5_000)
/// engine.fleet = leases
/// ```
final class FleetLeases: FleetCoalescing {
    private let loop: EventLoop
    private let tier: L2Responses
    private var redis: RedisConnection { tier.redis }
    let leaseMs: Int64
    var channel: String { tier.prefix + "leases" }
    private(set) var counters = FleetCounters()

    private final class Claim {
        let key: String
        var lifecycle: LeaseClaim
        let decided: (FleetVerdict) -> Void
        var timer: LoopTimer?
        /// Counted among the claims that waited (once, however often it asks again).
        var waited = false

        init(key: String, deadline: Int64, decided: @escaping (FleetVerdict) -> Void) {
            self.key = key
            lifecycle = LeaseClaim(deadline: deadline)
            self.decided = decided
        }
    }

    /// Claims waiting for their verdict, by key.
    private var claims: [String: [Claim]] = [:]
    /// Leases this daemon holds: key → its token (only the holder's token may renew or release a lease).
    private var held: [String: [UInt8]] = [:]
    private var renewal: LoopTimer?
    private let node = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    private var serial: UInt64 = 0

    init(loop: EventLoop, tier: L2Responses, leaseMs: Int64) {
        self.loop = loop
        self.tier = tier
        self.leaseMs = leaseMs
        tier.listener?.subscribe(channel) { [unowned self] payload in released(String(decoding: payload, as: UTF8.self)) }
        // Releases are heard on the listener: without it (or without Redis), nobody waits for one.
        tier.redis.onLost = { [unowned self] in redisLost() }
        if let listener = tier.listener, listener !== tier.redis { listener.onLost = { [unowned self] in redisLost() } }
    }

    /// Every waiting claim fetches on its own now rather than at its deadline.
    private func redisLost() {
        for claim in Array(claims.values.joined()) { step(claim, .unavailable) }
    }

    func close() {
        renewal?.close()
        renewal = nil
        for claim in claims.values.joined() { claim.timer?.close() }
        claims = [:]
    }

    // MARK: Claiming

    func claim(_ key: String, waitMs: Int, _ decided: @escaping (FleetVerdict) -> Void) {
        guard redis.isConnected else {
            counters.unavailable += 1
            return decided(.fetch(leased: false))
        }
        let claim = Claim(key: key, deadline: Int64(loop.nowMs) + Int64(waitMs), decided: decided)
        claims[key, default: []].append(claim)
        ask(claim)
    }

    /// Takes the lease unless another holds it; the reply: 0 taken, -1 free but the response is stored already
    /// (it was released after this daemon looked), else the holder's milliseconds left.
    static let acquireScript = """
        if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
          if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('DEL', KEYS[1]); return -1 end
          return 0
        end
        return math.max(redis.call('PTTL', KEYS[1]), 1)
        """

    private func ask(_ claim: Claim) {
        serial += 1
        let token = Array("\(node).\(serial)".utf8)
        let keys = [tier.leaseKey(claim.key), tier.redisKey(claim.key)]
        redis.send(FleetLeases.script(FleetLeases.acquireScript, keys: keys, args: [token, Array(String(leaseMs).utf8)])) { [self] reply in
            let event: LeaseClaim.Event
            switch reply {
            case .integer(0): event = .answered(.won)
            case .integer(-1): event = .answered(.storedMeanwhile)
            case .integer(let ms) where ms > 0: event = .answered(.heldFor(ms: ms))
            default: event = .unavailable
            }
            if case .answered(.won) = event { held[claim.key] = token }
            step(claim, event)
        }
    }

    private func step(_ claim: Claim, _ event: LeaseClaim.Event) {
        guard let action = claim.lifecycle.decide(event, now: Int64(loop.nowMs)) else { return }
        switch action {
        case .ask:
            ask(claim)
        case .wakeAt(let at):
            if !claim.waited { counters.waits += 1 }
            claim.waited = true
            let timer = claim.timer ?? LoopTimer(loop: loop) { [unowned self] _ in step(claim, .tick) }
            claim.timer = timer
            timer.start(afterMs: UInt64(max(0, at - Int64(loop.nowMs))))
        case .release:
            giveBack(claim.key, announce: false)
        case .verdict(let verdict):
            claim.timer?.close()
            claim.timer = nil
            claims[claim.key]?.removeAll { $0 === claim }
            if claims[claim.key]?.isEmpty == true { claims[claim.key] = nil }
            switch verdict {
            case .fetch(leased: true):
                counters.won += 1
                if claim.lifecycle.tookOver { counters.tookOver += 1 }
                renewWhileHeld()
            case .fetch(leased: false):
                if event == .tick { counters.gaveUp += 1 }
            case .lookAgain:
                counters.lookedAgain += 1
            }
            claim.decided(verdict)
        }
    }

    /// The fleet heard a release: the claims waiting for that key look again.
    private func released(_ key: String) {
        guard let waiting = claims[key] else { return }
        for claim in waiting { step(claim, .notified) }
    }

    // MARK: Holding and releasing

    func release(_ key: String) {
        // After this machine's writes of the response (a body read back from the disk first, when stored apart).
        tier.whenWritten(key) { [self] in giveBack(key, announce: true) }
    }

    /// Deletes the lease if this daemon's token still holds it, and announces the key (also when the lease had
    /// expired: the response is stored either way).
    static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
        if ARGV[2] ~= '' then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
        return 1
        """

    private func giveBack(_ key: String, announce: Bool) {
        guard let token = held.removeValue(forKey: key) else { return }
        let args = [token, announce ? Array(channel.utf8) : [], Array(key.utf8)]
        redis.send(FleetLeases.script(FleetLeases.releaseScript, keys: [tier.leaseKey(key)], args: args)) { [self] reply in
            if case .integer = reply { counters.released += 1 }
        }
    }

    static let renewScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
        return 0
        """

    /// A fetch may outlast its lease: every third of it, the leases still held are extended.
    private func renewWhileHeld() {
        guard renewal == nil else { return }
        let timer = LoopTimer(loop: loop) { [unowned self] timer in
            guard !held.isEmpty else {
                timer.close()
                renewal = nil
                return
            }
            for (key, token) in held {
                redis.send(FleetLeases.script(FleetLeases.renewScript, keys: [tier.leaseKey(key)],
                                              args: [token, Array(String(leaseMs).utf8)])) { _ in }
            }
            timer.start(afterMs: UInt64(max(1, leaseMs / 3)))
        }
        renewal = timer
        timer.start(afterMs: UInt64(max(1, leaseMs / 3)))
    }

    static func script(_ body: String, keys: [[UInt8]], args: [[UInt8]]) -> [[UInt8]] {
        [Array("EVAL".utf8), Array(body.utf8), Array(String(keys.count).utf8)] + keys + args
    }
}

/// What the fleet's coalescing did, for `stats`' `l2.leases`.
struct FleetCounters {
    /// Leases taken (this daemon fetched for the fleet), of which after a holder went away.
    var won: UInt64 = 0
    var tookOver: UInt64 = 0
    /// Claims that waited for another machine, those it then answered, and those whose wait ran out.
    var waits: UInt64 = 0
    var lookedAgain: UInt64 = 0
    var gaveUp: UInt64 = 0
    var released: UInt64 = 0
    /// Claims made while Redis was down: fetched alone at once.
    var unavailable: UInt64 = 0
}
