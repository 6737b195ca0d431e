import FerryCache

/// What `CacheStore.incr` found and did.
public enum CounterOutcome: Equatable, Sendable {
    /// The counter's value after the increment (stored and acknowledged as a set is).
    case value(Int64)
    /// The key holds a value that is not a counter's decimal integer (`CounterValue.parse`); left as it was.
    case notAnInteger
    /// The sum would not fit a signed 64-bit integer; left as it was.
    case overflow
}

extension CacheStore {
    /// Adds `delta` to the integer stored at `key` and stores the sum, atomically with respect to every other
    /// operation on the store: a missing (or expired) key counts from 0 and takes `ttlMs` (nil: no expiry); an
    /// existing one keeps its expiry, as Redis's `INCRBY` does. The sum is acknowledged once it is as durable as a
    /// `set` (`done` is `set`'s, mapped).
    ///
    /// Why a queue: the read may go to the disk (a thread hop), and two increments of one key reading the same old
    /// value would lose one. Increments of a key run one after the other; a `set` or `delete` that lands while an
    /// increment's disk read is out makes it read again (its `MutationTracker` ticket is stale).
    ///
    /// ```swift
    /// store.incr(key, by: 1, ttlMs: nil, now: nowMs) { result in … }   // .success(.value(1)) on a new key
    /// ```
    public func incr(_ key: CacheKey, by delta: Int64, ttlMs: Int64?, now: Int64,
                     _ done: @escaping (Result<CounterOutcome, StoreError>) -> Void) {
        if counterWaits[key] != nil {
            counterWaits[key]!.append { [unowned self] in runIncrement(key, by: delta, ttlMs: ttlMs, now: now, done) }
            return
        }
        counterWaits[key] = []
        runIncrement(key, by: delta, ttlMs: ttlMs, now: now, done)
    }

    /// One increment, the key held (`counterWaits[key]` present) until it is done.
    private func runIncrement(_ key: CacheKey, by delta: Int64, ttlMs: Int64?, now: Int64,
                              _ done: @escaping (Result<CounterOutcome, StoreError>) -> Void) {
        readCounter(key, now: now) { [unowned self] found in
            let finish: (Result<CounterOutcome, StoreError>) -> Void = { [unowned self] result in
                done(result)
                runNextIncrement(key)
            }
            let current: CacheEntry?
            switch found {
            case .failure(let error): return finish(.failure(error))
            case .success(.none): current = nil
            case .success(.some(.blob)): return finish(.success(.notAnInteger))
            case .success(.some(.entry(let entry))): current = entry
            }
            var start: Int64 = 0
            if let current {
                guard let parsed = CounterValue.parse(current.value) else { return finish(.success(.notAnInteger)) }
                start = parsed
            }
            guard case .value(let sum) = CounterValue.add(start, delta) else { return finish(.success(.overflow)) }
            // An existing counter keeps its expiry: the TTL it has left, to the millisecond.
            let ttl = current.map { entry in entry.expiresAt.map { max(1, $0 - now) } } ?? ttlMs
            set(key, value: CounterValue.bytes(sum), ttlMs: ttl, ifAbsent: false, now: now) { result in
                finish(result.map { _ in .value(sum) })
            }
        }
    }

    /// The counter's live value, read again while a mutation of its key landed during the read.
    private func readCounter(_ key: CacheKey, now: Int64, _ done: @escaping (Result<StoredValue?, StoreError>) -> Void) {
        let ticket = mutations.begin(key, mutates: false)
        // Larger values are no counter: read as a blob, never whole.
        read(key, now: now, streamAbove: 64) { [unowned self] result in
            guard mutations.end(key, ticket) else { return readCounter(key, now: now, done) }
            done(result.map { $0?.0 })
        }
    }

    /// The key's next queued increment runs, still holding it; with none queued the key is released.
    private func runNextIncrement(_ key: CacheKey) {
        guard let waiting = counterWaits[key], let next = waiting.first else {
            counterWaits[key] = nil
            return
        }
        counterWaits[key] = Array(waiting.dropFirst())
        next()
    }
}
