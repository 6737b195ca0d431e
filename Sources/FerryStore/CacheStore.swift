import CFerryIO
import FerryCache

/// Where a value came from.
public enum CacheSource: String, Sendable {
    /// `fleet`: the shared tier (`remote`) of another machine's value.
    case memory, disk, fleet
}

/// The project's storage layer, as the loop thread uses it: a memory tier (exact byte budget, LRU) in front of the
/// tiers below it (`StoreTier`: the disk today), kept consistent with them.
///
/// Memory hits are answered synchronously on the loop thread, with no thread hop, and so are small sets, which the
/// disk tier settles at the end of the loop iteration (`endOfIteration`): they are visible at once and acknowledged
/// then. Everything else goes to the disk tier in submission order and is answered once it committed. Nothing
/// acknowledged is lost when the process is killed. Completions always run on the loop thread. A completion that
/// arrives after a newer write, delete or clear of its key never puts an old value back into memory
/// (`MutationTracker`).
///
/// ```swift
/// let store = try CacheStore(config: StoreConfig(directory: dir), post: mailbox.post)
/// store.set(key, value: bytes, ttlMs: 30_000, ifAbsent: false, now: nowMs) { result in ... }
/// store.get(key, now: nowMs) { result in ... }
/// store.endOfIteration { flushReplies() }   // once per loop iteration
/// ```
///
/// Confined to the loop thread; `@unchecked Sendable` only so completions posted from the worker can reach it.
public final class CacheStore: @unchecked Sendable, SettledSets {
    public let config: StoreConfig
    /// Blob files that passed a whole check since start: handed out as descriptors without checking again.
    public let blobChecks = BlobChecks()
    /// Repairs made at start-up (damaged index moved aside, orphans removed), for the log.
    public let notices: [String]
    /// Lines for the daemon's log while it runs (the disk filling up and emptying).
    public var onNotice: (String) -> Void = { _ in }
    let memory: MemoryLRU<CacheKey, CacheEntry>
    /// The tier below memory: the disk's in the daemon, a counting fake in the store's unit tests.
    let disk: StoreTier
    var own = StoreCounters()
    /// Keys read from the disk tier since the last sweep (memory hits are marked in `memory`).
    private var accessed = Set<CacheKey>()
    private var accessesRecordedAt: Int64?
    /// Keeps late completions from putting old values into the memory tier.
    var mutations = MutationTracker()
    /// Counters with an increment in flight, and the increments queued behind it (`incr`).
    var counterWaits: [CacheKey: [() -> Void]] = [:]
    /// The tier shared with other machines for the namespaces it shares (`--l2-namespaces`), consulted after a
    /// local miss and told of every change (`CacheStore+Remote.swift`).
    public var remote: RemoteTier?
    /// The disk tier when it journals small sets: told of the journaled values the memory tier keeps and lets go
    /// (`CacheStore+Journaled.swift`).
    /// `disk` itself, which this store holds for its whole life: not `weak` (see `DiskTier.settledSets`).
    private(set) unowned(unsafe) var journalTier: DiskTier?
    /// Dirty values replaced by the set being journaled now or since the journal's last write (see `keep`).
    var displaced: [JournalRecord] = []
    /// Whether `beginSettling` is putting a journaled set in the memory tier (what it replaces there is displaced).
    var journaling = false

    /// `budget` counts the values waiting for the disk (`.storeQueue`); a large set that does not fit it fails.
    public convenience init(config: StoreConfig, budget: MemoryBudget = MemoryBudget(limit: 256 * 1024 * 1024),
                            post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) throws(StoreError) {
        let disk = try DiskTier(config: config, budget: budget, post: post)
        self.init(config: config, tier: disk, notices: disk.notices)
        disk.onNotice = { [unowned self] line in onNotice(line) }
    }

    /// A store on any tier (tests drive the memory tier's rules with a fake one).
    init(config: StoreConfig, tier: StoreTier, notices: [String] = []) {
        self.config = config
        memory = MemoryLRU(budget: config.memoryBudget, imageOf: { $0.image }, hashOf: { $0.digest }, prefetch: { ferry_prefetch($0) })
        disk = tier
        self.notices = notices
        tier.settledSets = self
        if let journaling = tier as? DiskTier {
            journalTier = journaling
            journaling.keeper = self
            memory.dirtyLeft = { [unowned self] key, entry, seq, replaced in
                journaledLeft(JournalRecord(seq: seq, key: key, entry: entry), replacedBySet: replaced)
            }
        }
    }

    /// The memory tier's counts and the disk tier's, as `stats` reports them.
    public var counters: StoreCounters {
        var c = own
        let d = disk.usage
        c.diskBytes = d.bytes
        c.diskEntries = d.entries
        c.diskEvictions = d.evictions
        c.damaged += d.damaged
        c.diskFull = d.diskFull
        c.expirations += d.expirations
        return c
    }

    /// Waits for queued disk work to commit, then stops the worker. Completions of that work are not run.
    public func close() { disk.close() }

    /// The tier may outlive the store (a completion it posted to the loop may still hold it): it must not reach
    /// the store through the references it keeps without retaining it.
    deinit {
        disk.settledSets = nil
        journalTier?.keeper = nil
    }

    /// Once per loop iteration, before the loop sleeps (the daemon's iteration hook; a test's loop after each pass):
    /// the disk tier settles the iteration's small sets, which produces their replies, `flushReplies` writes them,
    /// and the iteration's disk work starts (`StoreTier.endOfIteration`).
    ///
    /// ```swift
    /// let hook = LoopIterationHook(loop: loop) { store.endOfIteration { flushConnections() } }
    /// ```
    public func endOfIteration(flushReplies: () -> Void) { disk.endOfIteration(flushReplies: flushReplies) }

    // MARK: Operations

    public func get(_ key: CacheKey, now: Int64, _ done: @escaping (Result<(CacheEntry, CacheSource)?, StoreError>) -> Void) {
        read(key, now: now, streamAbove: nil) { result in
            done(result.map { found in
                guard let (value, source) = found, case .entry(let entry) = value else { return nil }
                return (entry, source)
            })
        }
    }

    /// `read`'s memory tier alone, at once: a live entry of at most `maxBytes` in memory, counted and marked as
    /// `read` counts and marks it; nil otherwise, with nothing counted (the caller then goes through `read`).
    /// The key is known by its bytes (`CacheKeyProbe`, the fast path's): no `CacheKey` is made for a hit.
    public func memoryHit(_ probe: CacheKeyProbe, now: Int64, maxBytes: Int) -> CacheEntry? {
        guard let entry = memory.get(hash: probe.digest, image: probe.image, markAccess: true, where: probe.matches),
              !entry.isExpired(now: now), entry.value.count <= maxBytes else { return nil }
        own.memoryHits += 1
        return entry
    }

    /// Prefetch hints for a key about to be looked up or set, by its digest (`CacheKeyProbe.digest`): its index
    /// bucket as its request arrives, its slot just before the batch of requests is answered (`MemoryLRU+Prefetch`).
    public func prefetchBucket(digest: Int) { memory.prefetchBucket(hash: digest) }
    public func prefetchSlot(digest: Int) { memory.prefetchSlot(hash: digest) }
    /// The value's bytes (its slot read: after `prefetchSlot`), which a hit's reply copies: the first two lines of
    /// the array's storage. Its address is read as the first word of the slot's `CacheEntry?` (`value`, an array:
    /// one reference to its storage, declared first), not through the entry, which would retain it. A hint: were
    /// the layout other, a useless line would be fetched, never a wrong one read.
    public func prefetchValue(digest: Int) {
        memory.withFirstValueField(hash: digest) { field in
            guard let storage = field.load(as: UnsafeRawPointer?.self) else { return }
            ferry_prefetch(storage)
            ferry_prefetch(storage + 64)
        }
    }

    /// `get` for a reply that can be written in pieces: a value on disk larger than `streamAbove` comes back as a
    /// `StoredBlob` to read as the client takes it, so a client that asks for many large values and reads none
    /// holds files, not memory. Such a value is not put in the memory tier.
    public func read(_ key: CacheKey, now: Int64, streamAbove: Int?,
                     _ done: @escaping (Result<(StoredValue, CacheSource)?, StoreError>) -> Void) {
        if let entry = memory.get(key, markAccess: true) {
            if !entry.isExpired(now: now) {
                own.memoryHits += 1
                return done(.success((.entry(entry), .memory)))
            }
            dropFromMemory(key)
            own.expirations += 1
        }
        let ticket = mutations.begin(key, mutates: false)
        disk.readValue(key, now: now, streamAbove: streamAbove) { [unowned self] result in
            let current = mutations.end(key, ticket)
            switch result {
            case .success(let value?):
                own.diskHits += 1
                accessed.insert(key)
                if current, case .entry(let entry) = value { remember(key, entry) }
                done(.success((value, .disk)))
            case .success(nil):
                if let remote, remote.shares(key) { return readRemote(key, remote, now: now, done) }
                own.misses += 1
                done(.success(nil))
            case .failure(let e): done(.failure(e))
            }
        }
    }

    /// A streamed value did not match its checksum: it is dropped from disk and counted (`counters.damaged`).
    /// Counted at once, so the reply that found it and a `stats` right after agree.
    public func reportDamaged(_ blob: StoredBlob) {
        own.damaged += 1
        blobChecks.forget(blob.hash)
        disk.reportDamaged(blob)
    }

    /// Stores a value; `done(false)` when `ifAbsent` and a live entry exists.
    public func set(_ key: CacheKey, value: [UInt8], ttlMs: Int64?, ifAbsent: Bool, now: Int64,
                    _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        guard value.count <= config.maxValueBytes else {
            return done(.failure(.valueTooLarge(size: value.count, limit: config.maxValueBytes)))
        }
        if ifAbsent, let existing = memory.peek(key), !existing.isExpired(now: now) { return done(.success(false)) }
        let entry = CacheEntry(value: value, createdAt: now, expiresAt: ttlMs.map { now + $0 })
        if let remote, remote.shares(key) { return setShared(key, entry, ifAbsent: ifAbsent, remote: remote, now: now, done) }
        setLocal(key, entry, ifAbsent: ifAbsent, now: now, done)
    }

    /// `set` in this machine's tiers only.
    func setLocal(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        if disk.settlesAtOnce(key, entry, ifAbsent: ifAbsent) {
            let ticket = beginSettling(key, entry)
            disk.write(key, entry, ifAbsent: false, now: now, settling: true) { [unowned self] result in
                endSettling(key, ticket, result)
                done(result)
            }
            return
        }
        let ticket = mutations.begin(key, mutates: true)
        disk.write(key, entry, ifAbsent: ifAbsent, now: now, settling: false) { [unowned self] result in
            let current = mutations.end(key, ticket)
            if case .success(true) = result {
                own.sets += 1
                if current { remember(key, entry) }
            }
            done(result)
        }
    }

    /// The fast path's set (FerryServer's `HotPath`): a value that settles at once — small, no `ifAbsent`, room on
    /// disk — is visible now and journaled like `set`'s, and `target` hears `setSettled(id:failure:)` at the end of
    /// the iteration, once the record is written. False, having done nothing, for any other set: the caller takes
    /// the general path (`set`).
    ///
    /// ```swift
    /// if store.setSettling(key, value: body, ttlMs: nil, now: now, ackTo: connection, id: 7) { return }  // acknowledged later
    /// ```
    public func setSettling(_ key: CacheKey, value: [UInt8], ttlMs: Int64?, now: Int64, ackTo target: SetAcknowledging,
                            id: UInt64) -> Bool {
        guard value.count <= config.maxValueBytes else { return false }
        let entry = CacheEntry(value: value, createdAt: now, expiresAt: ttlMs.map { now + $0 })
        guard disk.settlesAtOnce(key, entry, ifAbsent: false) else { return false }
        if let remote, remote.shares(key) { remote.write(key, entry, ifAbsent: false, now: now) { _ in } }
        let ticket = beginSettling(key, entry)
        disk.writeSettling(SettlingSet(key: key, ticket: ticket, target: target, id: id, memorySlot: memory.lastSet),
                           entry, now: now)
        return true
    }

    /// A set that settles at once (`set`'s and `setSettling`'s) is visible at once, as in Redis: a get later in this
    /// iteration (a pipelined set then get) sees the new value. It is acknowledged at the end of the iteration, once
    /// the record is written (`endSettling`).
    private func beginSettling(_ key: CacheKey, _ entry: CacheEntry) -> MutationTracker.Ticket {
        let ticket = mutations.beginShort(key)
        journaling = true
        remember(key, entry)
        journaling = false
        return ticket
    }

    /// A fast-path set's record was written (or failed to be): as `setLocal`'s settling completion, then its
    /// target hears it.
    public func settled(_ set: SettlingSet, failure: StoreError?) {
        endSettling(set.key, set.ticket, failure.map { .failure($0) } ?? .success(true))
        set.target.setSettled(id: set.id, failure: failure)
    }

    /// Its record was written, or failed to be: counted, or the value leaves the memory tier again (unless
    /// something newer replaced it meanwhile).
    private func endSettling(_ key: CacheKey, _ ticket: MutationTracker.Ticket, _ result: Result<Bool, StoreError>) {
        let current = mutations.end(key, ticket)
        if case .success = result { own.sets += 1 } else if current { dropFromMemory(key) }
    }

    /// Takes a finished file in the store's directory (`config.directory`, so that it can be renamed) as the value of
    /// `key`, without copying it: a fetched body spooled as it arrived. Not put in the memory tier (such values are
    /// read in pieces). The file is gone from its path afterwards, taken or not.
    ///
    /// ```swift
    /// store.adopt(key, AdoptedFile(path: spoolPath, size: n, checksum: sum, createdAt: now)) { result in … }
    /// ```
    public func adopt(_ key: CacheKey, _ file: AdoptedFile, _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        dropFromMemory(key)
        let ticket = mutations.begin(key, mutates: true)
        disk.adopt(key, file) { [unowned self] result in
            _ = mutations.end(key, ticket)
            if case .success(true) = result { own.sets += 1 }
            done(result)
        }
    }

    public func delete(_ key: CacheKey, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        if let remote, remote.shares(key) { remote.removed(key) }
        dropLocal(key, now: now, done)
    }

    /// `delete` in this machine's tiers only (another machine changed the key).
    public func dropLocal(_ key: CacheKey, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void = { _ in }) {
        // Gone from memory at once: a get arriving before the worker ran the delete must not find the old value.
        let liveInMemory = memory.peek(key).map { !$0.isExpired(now: now) } ?? false
        dropFromMemory(key)
        let ticket = mutations.begin(key, mutates: true)
        disk.remove(key, now: now) { [unowned self] result in
            _ = mutations.end(key, ticket)
            done(result.map { $0 || liveInMemory })
        }
    }

    /// Sets a new expiry (`nil`: never); `done(nil)` when there is no live entry.
    public func touch(_ key: CacheKey, ttlMs: Int64?, now: Int64, _ done: @escaping (Result<Int64??, StoreError>) -> Void) {
        let expiresAt = ttlMs.map { now + $0 }
        if let remote, remote.shares(key) { remote.retimed(key, expiresAt: expiresAt, now: now) }
        let ticket = mutations.begin(key, mutates: true)
        disk.retime(key, expiresAt: expiresAt, now: now) { [unowned self] result in
            let current = mutations.end(key, ticket)
            switch result {
            case .success(true):
                if current { memory.update(key) { $0.expiresAt = expiresAt } }
                done(.success(.some(expiresAt)))
            case .success(false):
                if current { dropFromMemory(key) }
                done(.success(.none))
            case .failure(let e): done(.failure(e))
            }
        }
    }

    /// A read for inspection (`ferry http show`): the live value wherever it is, leaving the memory tier, recency and
    /// the hit counters as they were, so looking at the cache does not change what it keeps.
    public func peek(_ key: CacheKey, now: Int64, _ done: @escaping (Result<CacheEntry?, StoreError>) -> Void) {
        if let entry = memory.peek(key) { return done(.success(entry.isExpired(now: now) ? nil : entry)) }
        disk.read(key, now: now, done)
    }

    public func list(namespace: String, prefix: String, cursor: String?, limit: Int, now: Int64,
                     _ done: @escaping (Result<(keys: [ListedKey], more: Bool), StoreError>) -> Void) {
        disk.list(namespace: namespace, prefix: prefix, cursor: cursor, limit: limit, now: now, done)
    }

    public func clear(namespace: String, now: Int64, _ done: @escaping (Result<Int, StoreError>) -> Void) {
        if let remote, remote.shares(namespace: namespace) { remote.cleared(namespace: namespace, now: now) }
        clearLocal(namespace: namespace, now: now, done)
    }

    /// `clear` in this machine's tiers only.
    public func clearLocal(namespace: String, now: Int64, _ done: @escaping (Result<Int, StoreError>) -> Void = { _ in }) {
        _ = memory.removeAll(visiting: Int.max) { key, _ in key.namespace == namespace }
        mutations.cleared(namespace)
        syncMemoryCounters()
        disk.clear(namespace: namespace, now: now, done)
    }

    /// Drops expired entries (memory now, disk through the worker) and records the reads since the last record
    /// in the disk tier's LRU order, every `accessRecordIntervalMs`. Called from a loop timer, about once a second.
    public func sweep(now: Int64) {
        let expired = memory.removeAll(visiting: 2000) { _, entry in entry.isExpired(now: now) }
        own.expirations += UInt64(expired.count)
        syncMemoryCounters()
        var touched: [CacheKey] = []
        if accessesRecordedAt.map({ now - $0 >= config.accessRecordIntervalMs || $0 > now }) ?? true {
            // Memory hits were marked in the memory tier (cheaper than a set insert per hit); disk hits are here.
            touched = Array(accessed) + memory.takeAccessed()
            accessed.removeAll(keepingCapacity: true)
            accessesRecordedAt = now
        }
        disk.sweep(now: now, accessed: touched)
    }

    // MARK: Memory tier

    /// The memory tier's budget now (`--memory-limit`, changed live by a reload).
    public var memoryBudget: Int { memory.budget }

    /// A new memory budget (a reload): a smaller one evicts least recently used values now (they stay on disk).
    public func resizeMemory(_ bytes: Int) {
        own.memoryEvictions += UInt64(memory.resize(budget: bytes).count)
        syncMemoryCounters()
    }

    func remember(_ key: CacheKey, _ entry: CacheEntry) {
        let evicted = memory.set(key, entry, cost: entry.value.count + key.overheadBytes)
        own.memoryEvictions += UInt64(evicted.filter { $0.key != key }.count)
        syncMemoryCounters()
    }

    @discardableResult
    private func dropFromMemory(_ key: CacheKey) -> Bool {
        let removed = memory.remove(key) != nil
        syncMemoryCounters()
        return removed
    }

    private func syncMemoryCounters() {
        own.memoryBytes = memory.usedBytes
        own.memoryEntries = memory.count
    }
}
