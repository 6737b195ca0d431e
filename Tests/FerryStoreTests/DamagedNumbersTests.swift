import Foundation
import Testing
import FerryCache
@testable import FerryStore

/// One bad number in the index or the journal must not stop the store from opening: each is refused before any
/// arithmetic, reported, and passed over (issue 10: these crashed every start with an overflow trap).
@Suite struct DamagedNumbersTests {
    static func writeFile(_ path: String, _ bytes: [UInt8]) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    @Test func aNegativeAppliedSeqIsReportedAndEveryRecordReplayed() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let h = try StoreHarness(dir: dir)
            #expect(try h.set("kept", [1, 2, 3]))
            h.store.close()
        }
        do {
            let index = try DiskIndex(path: dir + "/index.db")
            try index.setAppliedSeq(UInt64(bitPattern: -1))
        }
        // A journal left by a killed daemon, with a record above nothing valid.
        var record: [UInt8] = []
        Journal.encode(seq: 5, try CacheKey(key: "journaled"), CacheEntry(value: [9], createdAt: 1000, expiresAt: nil), into: &record)
        Self.writeFile(Journal.path(dir, generation: 3), record)
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        #expect(h.store.notices.contains { $0.contains("applied_seq -1 is not a valid sequence number") }, "\(h.store.notices)")
        #expect(try h.get("kept")?.0.value == [1, 2, 3])
        #expect(try h.get("journaled")?.0.value == [9], "no acknowledged set is lost")
        #expect(try h.set("after", [4]), "and the journal goes on from valid numbers")
    }

    @Test func aRecordWithTheLargestSequenceNumberIsPassedOver() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var bytes: [UInt8] = []
        Journal.encode(seq: 7, try CacheKey(key: "good"), CacheEntry(value: [1], createdAt: 1000, expiresAt: nil), into: &bytes)
        Journal.encode(seq: UInt64.max, try CacheKey(key: "bad"), CacheEntry(value: [2], createdAt: 1000, expiresAt: nil), into: &bytes)
        Self.writeFile(Journal.path(dir, generation: 1), bytes)
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        #expect(h.store.notices.contains { $0.contains("passed over 1 records") }, "\(h.store.notices)")
        #expect(try h.get("good")?.0.value == [1])
        #expect(try h.get("bad") == nil)
        #expect(try h.set("next", [3]))
    }

    @Test func aJournalFileNamedWithTheLargestGenerationIsMovedAsideUnread() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var bytes: [UInt8] = []
        Journal.encode(seq: 1, try CacheKey(key: "x"), CacheEntry(value: [1], createdAt: 1000, expiresAt: nil), into: &bytes)
        Self.writeFile(dir + "/journal.18446744073709551615", bytes)
        Self.writeFile(dir + "/journal.0", bytes)
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        #expect(h.store.notices.filter { $0.hasPrefix("JOURNAL FILE") }.count == 2, "\(h.store.notices)")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(names.contains("damaged-journal.18446744073709551615") && names.contains("damaged-journal.0"))
        #expect(try h.set("works", [1]) && h.get("works")?.0.value == [1])
    }
}

/// `--fsync`: each policy's SQLite setting, and every policy keeps what it acknowledged across a reopen.
@Suite struct FsyncPolicyTests {
    @Test func eachPolicySetsItsSQLiteSynchronousLevel() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (policy, level) in [(FsyncPolicy.always, "2"), (.everysec, "1"), (.no, "0")] {
            let index = try DiskIndex(path: dir + "/index-\(policy.rawValue).db", fsync: policy)
            #expect(try index.db.scalarText("PRAGMA synchronous") == level, "\(policy)")
        }
    }

    @Test func everyPolicyKeepsWhatItAcknowledged() throws {
        for policy in FsyncPolicy.allCases {
            let dir = tempDir()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let large = [UInt8](repeating: 5, count: 200_000)
            do {
                let h = try StoreHarness(dir: dir) { $0.fsync = policy }
                #expect(try h.set("small", [1]) && h.set("large", large))
                h.store.sweep(now: 2000)  // seals and retires the journal (the everysec path syncs before deleting it)
                #expect(try h.get("small")?.0.value == [1])
                h.store.close()
            }
            #expect(Journal.files(in: dir).isEmpty, "\(policy): a clean stop leaves no journal")
            let h = try StoreHarness(dir: dir) { $0.fsync = policy }
            defer { h.store.close() }
            #expect(try h.get("small")?.0.value == [1] && h.get("large")?.0.value == large, "\(policy)")
        }
    }
}

/// Damage is never served as data: every value read from disk is checked against the checksum written with it.
@Suite struct DamagedValuesTests {
    static func blobFiles(_ dir: String) -> [String] {
        (FileManager.default.enumerator(atPath: dir + "/blobs")?.allObjects as? [String] ?? [])
            .filter { !$0.contains("/.tmp") }
            .map { dir + "/blobs/" + $0 }
            .filter { var isDir: ObjCBool = false; return FileManager.default.fileExists(atPath: $0, isDirectory: &isDir) && !isDir.boolValue }
    }

    @Test func aFlippedByteInABlobIsAMissRemovedAndCounted() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let value = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        do {
            let h = try StoreHarness(dir: dir)
            #expect(try h.set("big", value))
            h.store.close()
        }
        let blobs = Self.blobFiles(dir)
        try #require(blobs.count == 1)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: blobs[0])))
        bytes[150_000] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: blobs[0]))
        let h = try StoreHarness(dir: dir)
        defer { h.store.close() }
        #expect(try h.get("big") == nil, "a damaged value is never returned")
        #expect(h.store.counters.damaged == 1)
        #expect(Self.blobFiles(dir).isEmpty, "and its file is removed")
        #expect(try h.get("big") == nil && h.store.counters.damaged == 1, "the entry is gone: a plain miss now")
        #expect(try h.set("big", value) && h.get("big")?.0.value == value, "and can be stored again")
    }

    /// A store in `dir` holding `values`, closed, its index changed behind its back by `sql`, and opened again.
    static func reopened(_ dir: String, storing values: [(String, [UInt8])], then sql: String) throws -> StoreHarness {
        do {
            let h = try StoreHarness(dir: dir)
            for (key, value) in values { #expect(try h.set(key, value), "set \(key)") }
            h.store.close()
        }
        try DiskIndex(path: dir + "/index.db").db.exec(sql)
        return try StoreHarness(dir: dir)
    }

    @Test func aDamagedInlineValueThatPassesSQLitesChecksIsAMiss() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A page that SQLite's quick_check accepts but whose bytes changed: the row's value, not its checksum.
        let h = try Self.reopened(dir, storing: [("token", Array("secret-token".utf8)), ("other", [1, 2, 3])],
                                  then: "UPDATE entries SET inline_value = x'7365637265742d746f6b656f' WHERE key = x'746f6b656e'")
        defer { h.store.close() }
        #expect(try h.get("token") == nil && h.store.counters.damaged == 1)
        #expect(try h.get("other")?.0.value == [1, 2, 3], "the others are untouched")
    }

    @Test func rowsFromBeforeTheChecksumColumnStillRead() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = try Self.reopened(dir, storing: [("old", [9, 9])], then: "UPDATE entries SET checksum = NULL, striped_checksum = NULL")
        defer { h.store.close() }
        #expect(try h.get("old")?.0.value == [9, 9] && h.store.counters.damaged == 0)
    }
}
