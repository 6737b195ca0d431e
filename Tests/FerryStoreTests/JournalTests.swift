import Foundation
import Synchronization
import Testing
import FerryCache
@testable import FerryStore

@Suite struct JournalTests {
    /// Journals written by a daemon before the striped checksum (their records summed with `Checksum64`, or before
    /// that with FNV-1a) are still replayed after an upgrade; a damaged one still is not.
    @Test(arguments: ["checksum64", "fnv1a"])
    func recordsOfAnOlderChecksumAreReplayedAndDamagedOnesAreNot(_ older: String) throws {
        func sumOf(_ bytes: UnsafeRawBufferPointer) -> UInt64 { older == "fnv1a" ? Journal.fnv1a(bytes) : Journal.checksum64(bytes) }
        var old: [UInt8] = []
        let entries = [CacheEntry(value: [UInt8](repeating: 7, count: 70_000), createdAt: 5, expiresAt: 9),
                       CacheEntry(value: [1, 2, 3], createdAt: 6, expiresAt: nil)]
        for (n, entry) in entries.enumerated() {
            let start = old.count
            Journal.encode(seq: UInt64(n + 1), try CacheKey(key: "k\(n)"), entry, into: &old)
            let sum = old.withUnsafeBytes { sumOf(UnsafeRawBufferPointer(rebasing: $0[(start + 12)...])) }
            #expect(sum != old.withUnsafeBytes { Journal.checksum(UnsafeRawBufferPointer(rebasing: $0[(start + 12)...])) })
            for i in 0..<8 { old[start + 4 + i] = UInt8(truncatingIfNeeded: sum >> UInt64(8 * (7 - i))) }
        }
        var reader = Journal.Reader(bytes: old)
        #expect(reader.nextRecord()?.entry == entries[0] && reader.nextRecord()?.entry == entries[1])
        old[40] ^= 1
        var damaged = Journal.Reader(bytes: old)
        #expect(damaged.nextRecord() == nil, "no checksum matches a flipped bit")
    }

    @Test func recordsRoundTripAndATornTailIsIgnored() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try JournalWriter(directory: dir, generation: 7, nextSeq: 100)
        let records = try (0..<50).map { k in
            (try CacheKey(namespace: "ns\(k % 3)", key: "k\(k)-é"), CacheEntry(value: [UInt8](repeating: UInt8(k), count: k * 10),
                                                                              createdAt: Int64(1000 + k), expiresAt: k % 2 == 0 ? nil : Int64(5000 + k)))
        }
        for (key, entry) in records[..<20] { writer.add(key, entry) }
        #expect(try writer.write().map(\.seq) == Array(100..<120))
        for (key, entry) in records[20...] { writer.add(key, entry) }
        #expect(try writer.write().count == 30)
        let path = dir + "/journal.7"
        #expect(Journal.files(in: dir).map(\.path) == [path])
        let back = Journal.read(path)
        #expect(back.map(\.seq) == Array(100..<150))
        #expect(zip(back, records).allSatisfy { $0.key == $1.0 && $0.entry == $1.1 })
        // A record cut short (the process died mid-write) and garbage after it are not replayed.
        var torn: [UInt8] = []
        Journal.encode(seq: 150, try CacheKey(key: "torn"), CacheEntry(value: [1, 2, 3], createdAt: 1, expiresAt: nil), into: &torn)
        let fd = open(path, O_WRONLY | O_APPEND)
        _ = torn.dropLast(2).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        #expect(Journal.read(path).count == 50)
        // A flipped byte inside a record ends the replay there.
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        data[100] ^= 0xFF
        try data.write(to: URL(fileURLWithPath: path))
        #expect(Journal.read(path).count < 50)
        // Sealing moves on: a later write goes to the next generation, never into the sealed file.
        #expect(writer.seal() == path)
        writer.add(try CacheKey(key: "late"), CacheEntry(value: [9], createdAt: 1, expiresAt: nil))
        #expect(try writer.write().count == 1)
        #expect(Journal.files(in: dir).map(\.generation) == [7, 8])
    }

    @Test func journaledSetsAreReadDeletedAndKeptInOrder() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0 }  // every get goes to the disk tier
            #expect(try h.set("a", [1]))
            #expect(try h.get("a")?.0.value == [1], "served from the journaled sets")
            #expect(try h.set("a", [2]))
            let key = try CacheKey(key: "a")
            #expect(try h.wait { h.store.delete(key, now: 1000, $0) }.get() == true, "deleting a journaled set")
            #expect(try h.get("a") == nil)
            #expect(try h.set("b", [3]))
            h.store.close()
        }
        #expect(Journal.files(in: dir).isEmpty, "a clean stop applies the journal and deletes it")
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        #expect(try h.get("a") == nil)
        #expect(try h.get("b")?.0.value == [3])
    }

    @Test func startUpReplaysOnlyRecordsTheIndexDoesNotHold() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let h = try StoreHarness(dir: dir)
            #expect(try h.set("a", [1]))  // seq 1, applied at the clean stop: applied_seq = 1
            h.store.close()
        }
        // What a killed daemon leaves: a journal whose first record the index already holds (and a later write
        // superseded), followed by one it never applied.
        let writer = try JournalWriter(directory: dir, generation: 3, nextSeq: 1)
        writer.add(try CacheKey(key: "a"), CacheEntry(value: [9], createdAt: 1, expiresAt: nil))
        writer.add(try CacheKey(key: "b"), CacheEntry(value: [2], createdAt: 1, expiresAt: nil))
        #expect(try writer.write().map(\.seq) == [1, 2])
        writer.seal()
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0 }
        defer { h.store.close() }
        #expect(h.store.notices.contains("replayed 1 journaled sets into the index"), "\(h.store.notices)")
        #expect(try h.get("a")?.0.value == [1], "seq 1 is at or below applied_seq: not replayed")
        #expect(try h.get("b")?.0.value == [2])
        #expect(Journal.files(in: dir).map(\.generation) == [4], "replayed files are deleted; the store writes the next generation")
        #expect(try h.set("c", [3]))
        #expect(Journal.read(dir + "/journal.4").map(\.seq) == [3], "sequence numbers go on above the replayed ones")
    }

    /// A killed daemon's journal may hold a hot key many times (up to `applyIntervalMs` of sets): start-up writes the
    /// newest record of each key, by sequence number, whichever file it is in.
    @Test func startUpWritesTheNewestRecordOfEachKeyOnce() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hot = try CacheKey(key: "hot"), other = try CacheKey(namespace: "ns", key: "hot")
        let first = try JournalWriter(directory: dir, generation: 1, nextSeq: 1)
        for i in 0..<500 { first.add(hot, CacheEntry(value: [UInt8(i & 255)], createdAt: Int64(i), expiresAt: nil)) }
        first.add(other, CacheEntry(value: [7], createdAt: 1, expiresAt: nil))
        _ = try first.write()
        first.seal()
        let second = try JournalWriter(directory: dir, generation: 2, nextSeq: 502)
        second.add(hot, CacheEntry(value: [42], createdAt: 9_000, expiresAt: nil))
        _ = try second.write()
        second.seal()
        // A record from an older file with a lower number, read last (a spare written over keeps stale tails):
        // it must not win over seq 502.
        let stale = try JournalWriter(directory: dir, generation: 3, nextSeq: 300)
        stale.add(hot, CacheEntry(value: [1], createdAt: 1, expiresAt: nil))
        _ = try stale.write()
        stale.seal()
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0 }
        defer { h.store.close() }
        #expect(h.store.notices.contains("replayed 502 journaled sets into the index"), "the stale one passed over: \(h.store.notices)")
        #expect(try h.get("hot")?.0.value == [42])
        #expect(try h.get("hot")?.0.createdAt == 9_000)
        #expect(try h.get("hot", ns: "ns")?.0.value == [7])
        #expect(h.store.counters.diskEntries == 2)
        #expect(try h.set("next", [1]))
        #expect(Journal.read(dir + "/journal.4").map(\.seq) == [503], "numbering goes on above the highest replayed")
    }
}
