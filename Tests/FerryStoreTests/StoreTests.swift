import Foundation
import Synchronization
import Testing
import FerryCache
import FerryBytes
@testable import FerryStore

/// Stands in for the daemon's loop: completions posted by the disk worker are run here, on the test's thread.
final class ManualLoop: Sendable {
    private let queue = Mutex<[@Sendable () -> Void]>([])

    var post: @Sendable (@escaping @Sendable () -> Void) -> Void {
        { job in self.queue.withLock { $0.append(job) } }
    }

    /// Runs posted work until `done()` holds (or 10 s pass), with `endOfIteration` after each pass as the daemon's
    /// loop runs it.
    func run(until done: () -> Bool, endOfIteration: () -> Void) {
        let deadline = Date().addingTimeInterval(10)
        endOfIteration()
        while !done() && Date() < deadline {
            let jobs = queue.withLock { q in defer { q.removeAll() }; return q }
            if jobs.isEmpty { usleep(200) }
            for job in jobs { job() }
            endOfIteration()
        }
    }
}

/// Synchronous wrappers for tests: issue the call, run the loop until its completion ran.
struct StoreHarness {
    let loop = ManualLoop()
    let store: CacheStore
    let dir: String

    init(dir: String, configure: (inout StoreConfig) -> Void = { _ in }) throws {
        self.dir = dir
        var config = StoreConfig(directory: dir)
        configure(&config)
        store = try CacheStore(config: config, post: loop.post)
    }

    func wait<T>(_ call: (@escaping (T) -> Void) -> Void) -> T {
        var out: T?
        call { out = $0 }
        run { out != nil }
        return out!
    }

    /// Runs the loop, the store's end of iteration included, until `done()` holds.
    func run(until done: () -> Bool) {
        loop.run(until: done) { store.endOfIteration {} }
    }

    func set(_ k: String, _ v: [UInt8], ns: String = "default", ttl: Int64? = nil, ifAbsent: Bool = false, now: Int64 = 1000) throws -> Bool {
        let key = try CacheKey(namespace: ns, key: k)
        return try wait { store.set(key, value: v, ttlMs: ttl, ifAbsent: ifAbsent, now: now, $0) }.get()
    }

    func get(_ k: String, ns: String = "default", now: Int64 = 1000) throws -> (CacheEntry, CacheSource)? {
        let key = try CacheKey(namespace: ns, key: k)
        return try wait { store.get(key, now: now, $0) }.get()
    }
}

func tempDir() -> String {
    var template = Array("/tmp/ferry-store-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

@Suite struct CacheStoreTests {
    @Test func setGetFromMemoryThenFromDiskAfterRestart() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let small = (0...255).map { UInt8($0) }
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 * 13) }
        do {
            let h = try StoreHarness(dir: dir)
            #expect(try h.set("small", small))
            #expect(try h.set("large", large))
            #expect(try h.get("small")?.1 == .memory)
            #expect(try h.get("small")?.0.value == small)
            h.store.close()
        }
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        let again = try h.get("large")
        #expect(again?.1 == .disk)
        #expect(again?.0.value == large)
        #expect(again?.0.createdAt == 1000)
        #expect(try h.get("small")?.0.value == small)
        #expect(try h.get("small")?.1 == .memory, "a disk hit is promoted to memory")
        #expect(try h.get("missing") == nil)
    }

    /// Every statement is reset after each batch, so no read transaction pins the WAL and it is rewound.
    @Test func theWriteAheadLogDoesNotGrowWithoutBound() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0 }
        defer { h.store.close() }
        for k in 0..<3000 {
            #expect(try h.set("k\(k % 50)", [UInt8](repeating: UInt8(k & 255), count: 4096)))
            if k % 7 == 0 { _ = try h.get("k\((k + 3) % 50)") }
        }
        let walPath = dir + "/index.db-wal"
        let wal = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int) ?? 0
        #expect(wal < 8 << 20, "WAL is \(wal) bytes after 12 MB of writes: automatic checkpoints rewind it")
        h.store.sweep(now: 1000)
        _ = h.wait { done in h.store.list(namespace: "default", prefix: "", cursor: nil, limit: 1, now: 1000) { done($0) } }
        let truncated = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int) ?? 0
        #expect(truncated < 1 << 20, "WAL is \(truncated) bytes after a sweep's checkpoint")
    }

    @Test func oneDaemonPerCacheDirectory() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try StoreHarness(dir: dir)
        defer { first.store.close() }
        #expect(throws: StoreError.self) { _ = try CacheStore(config: StoreConfig(directory: dir), post: { _ in }) }
    }

    @Test func expiredEntriesAreNeverReturned() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        #expect(try h.set("k", [1], ttl: 50, now: 1000))
        #expect(try h.get("k", now: 1049) != nil)
        #expect(try h.get("k", now: 1050) == nil, "from memory")
        #expect(try h.get("k", now: 1050) == nil, "and from disk")
        h.store.sweep(now: 2000)
        _ = h.wait { done in h.store.list(namespace: "default", prefix: "", cursor: nil, limit: 10, now: 2000) { done($0) } }
        #expect(h.store.counters.diskEntries == 0, "the sweep deleted the row")
    }

    @Test func memoryBudgetIsExactAndEvictsLeastRecent() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 10_000 }
        defer { h.store.close() }
        for k in 0..<50 {
            #expect(try h.set("k\(k)", [UInt8](repeating: UInt8(k), count: 1000)))
            #expect(h.store.counters.memoryBytes <= 10_000)
        }
        #expect(h.store.counters.memoryEvictions > 0)
        #expect(try h.get("k0")?.1 == .disk, "evicted from memory, still on disk")
        #expect(try h.get("k49")?.1 == .memory)
    }

    @Test func diskBudgetNeverExceededOldestGoFirst() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) {
            $0.diskBudget = 200_000
            $0.memoryBudget = 0
            $0.inlineThreshold = 4096
        }
        defer { h.store.close() }
        for k in 0..<100 {
            #expect(try h.set("k\(k)", [UInt8](repeating: UInt8(k), count: 10_000), now: 1000 + Int64(k)))
            #expect(h.store.counters.diskBytes <= 200_000)
        }
        #expect(h.store.counters.diskEvictions > 0)
        #expect(try h.get("k0", now: 5000) == nil)
        #expect(try h.get("k99", now: 5000)?.0.value.count == 10_000)
        let blobFiles = FileManager.default.enumerator(atPath: dir + "/blobs")?.allObjects.filter { ($0 as? String)?.count ?? 0 > 30 }  // ab/cd/name
        #expect((blobFiles?.count ?? 0) == h.store.counters.diskEntries, "evicted blobs were deleted")
    }

    @Test func ifAbsentDeleteTouchListClear() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        #expect(try h.set("a", [1]))
        #expect(try h.set("a", [2], ifAbsent: true) == false)
        #expect(try h.get("a")?.0.value == [1])
        let key = try CacheKey(key: "a")
        #expect(try h.wait { h.store.delete(key, now: 1000, $0) }.get() == true)
        #expect(try h.wait { h.store.delete(key, now: 1000, $0) }.get() == false)
        _ = try h.set("gone", [1], ttl: 10, now: 1000)
        let goneKey = try CacheKey(key: "gone")
        #expect(try h.wait { h.store.delete(goneKey, now: 2000, $0) }.get() == false, "an expired entry is not reported deleted")
        #expect(try h.set("a", [3], ifAbsent: true))
        let touched = try h.wait { h.store.touch(key, ttlMs: 10, now: 1000, $0) }.get()
        #expect(touched == .some(1010))
        #expect(try h.get("a", now: 1011) == nil)
        for k in 0..<25 { _ = try h.set(String(format: "p/%02d", k), [UInt8(k)]) }
        _ = try h.set("q/1", [0])
        _ = try h.set("p/ns", [0], ns: "other")
        var keys: [String] = []
        var cursor: String? = nil
        repeat {
            let page = try h.wait { h.store.list(namespace: "default", prefix: "p/", cursor: cursor, limit: 10, now: 1000, $0) }.get()
            keys += page.keys.map(\.key)
            cursor = page.more ? page.keys.last?.key : nil
        } while cursor != nil
        #expect(keys == (0..<25).map { String(format: "p/%02d", $0) })
        #expect(try h.wait { h.store.clear(namespace: "default", now: 2000, $0) }.get() == 26)
        #expect(try h.get("p/ns", ns: "other") != nil, "other namespaces untouched")
    }

    @Test func tooLargeValuesAreRefusedAndNothingIsStored() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir) { $0.maxValueBytes = 1000 }
        defer { h.store.close() }
        #expect(throws: StoreError.valueTooLarge(size: 1001, limit: 1000)) { try h.set("k", [UInt8](repeating: 0, count: 1001)) }
        #expect(try h.get("k") == nil)
    }

    @Test func damagedIndexIsMovedAsideAndTheStoreStartsEmpty() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let h = try StoreHarness(dir: dir)
            _ = try h.set("k", [1, 2, 3])
            h.store.close()
        }
        // Overwrite the database header and pages with garbage.
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) })
        try garbage.write(to: URL(fileURLWithPath: dir + "/index.db"))
        try? FileManager.default.removeItem(atPath: dir + "/index.db-wal")
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        #expect(h.store.notices.contains { $0.contains("DAMAGED") })
        #expect(try h.get("k") == nil)
        #expect(try h.set("k", [9]))
        let aside = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("index.db.corrupt-") }
        #expect(!aside.isEmpty)
    }

    @Test func orphanBlobsAndRowsWithoutBlobsAreCleanedAtStart() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let big = [UInt8](repeating: 7, count: 100_000)
        let hash = BlobFiles.contentName(of: big)
        do {
            let h = try StoreHarness(dir: dir)
            _ = try h.set("big", big)
            h.store.close()
        }
        let blobPath = "\(dir)/blobs/\(hash.prefix(2))/\(hash.dropFirst(2).prefix(2))/\(hash)"
        #expect(FileManager.default.fileExists(atPath: blobPath))
        try FileManager.default.removeItem(atPath: blobPath)
        let orphanDir = "\(dir)/blobs/ff/ee"
        try FileManager.default.createDirectory(atPath: orphanDir, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: orphanDir + "/ffee" + String(repeating: "0", count: 60), contents: Data([1]))
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        #expect(h.store.notices.count == 2, "\(h.store.notices)")
        #expect(try h.get("big") == nil)
        #expect(h.store.counters.diskEntries == 0)
        #expect(!FileManager.default.fileExists(atPath: orphanDir + "/ffee" + String(repeating: "0", count: 60)))
    }
}

@Suite struct MutationTrackerTests {
    @Test func laterMutationsMakeEarlierTicketsStale() throws {
        var t = MutationTracker()
        let k = try CacheKey(key: "k"), other = try CacheKey(key: "other")
        // A disk read, then a set of the key: the read's answer is stale, the set is current.
        let read = t.begin(k, mutates: false)
        let set = t.beginShort(k)
        let readCurrent = t.end(k, read), setCurrent = t.end(k, set)
        #expect(!readCurrent && setCurrent)
        #expect(t.keysInFlight == 0, "entries go when their key has nothing in flight")
        // A journaled set, then a delete: the set is stale when it is acknowledged.
        let quick = t.beginShort(k)
        let delete = t.begin(k, mutates: true)
        let quickCurrent = t.end(k, quick), deleteCurrent = t.end(k, delete)
        #expect(!quickCurrent && deleteCurrent)
        // Two sets of the key in one iteration: each is current (the later one lands last).
        let a = t.beginShort(k), b = t.beginShort(k)
        let aCurrent = t.end(k, a), bCurrent = t.end(k, b)
        #expect(aCurrent && bCurrent)
        // Work on another key does not matter; a clear of the namespace does.
        let mine = t.beginShort(k)
        let theirs = t.begin(other, mutates: true)
        let mineCurrent = t.end(k, mine), theirsCurrent = t.end(other, theirs)
        #expect(mineCurrent && theirsCurrent)
        let beforeClear = t.begin(k, mutates: false)
        t.cleared(CacheKey.defaultNamespace)
        let beforeCurrent = t.end(k, beforeClear)
        #expect(!beforeCurrent)
        let afterClear = t.beginShort(k)
        let afterCurrent = t.end(k, afterClear)
        #expect(afterCurrent)
    }
}

@Suite struct LateCompletionTests {
    @Test func aSetAcknowledgedAfterADeleteWasQueuedDoesNotComeBackInMemory() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        let key = try CacheKey(key: "k")
        // One loop iteration: a pipelined set, then a delete of the same key. The set's record is written (and the
        // set acknowledged) at the end of the iteration, after the delete was queued.
        var acknowledged = false
        var deleted: Bool?
        h.store.set(key, value: [1], ttlMs: nil, ifAbsent: false, now: 1000) { _ in acknowledged = true }
        h.store.delete(key, now: 1000) { deleted = try? $0.get() }
        h.run { acknowledged && deleted != nil }
        #expect(try h.get("k") == nil, "the delete came last: nothing to return, from memory or disk")
    }

    @Test func aDiskReadThatFinishesAfterANewerSetDoesNotPutTheOldValueInMemory() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let h = try StoreHarness(dir: dir)
            #expect(try h.set("k", [1]))
            h.store.close()
        }
        let h = try StoreHarness(dir: dir)  // memory tier empty: the first get goes to the disk
        defer { h.store.close() }
        let key = try CacheKey(key: "k")
        var read: [UInt8]?
        var stored = false
        h.store.get(key, now: 2000) { read = (try? $0.get())??.0.value }
        h.store.set(key, value: [2], ttlMs: nil, ifAbsent: false, now: 2000) { stored = (try? $0.get()) ?? false }
        h.run { read != nil && stored }
        #expect(read == [1], "the read was issued before the set")
        #expect(try h.get("k", now: 2000)?.0.value == [2], "and its late answer did not replace the newer value in memory")
    }
}
