import Foundation
import Testing
import FerryCache
@testable import FerryStore

/// Retired journal files written over again: four kept at most, and a file written over never gives back its old
/// records, even where one of them starts exactly where the new records end.
@Suite struct JournalSparesTests {
    private func names(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
    }

    @Test func fourRetiredFilesAreKeptTheRestDeletedAndEachIsTakenOnce() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spares = JournalSpares(directory: dir)
        let paths = (1...7).map { "\(dir)/journal.\($0)" }
        for path in paths { _ = FileManager.default.createFile(atPath: path, contents: Data(path.utf8)) }
        #expect(paths[..<6].map { spares.retire($0, keep: true) } == [true, true, true, true, false, false])
        #expect(!spares.retire(paths[6], keep: false), "not kept when the disk is short")
        #expect(names(dir) == (0..<4).map { "spare-journal.\($0)" }, "retired files are gone from their paths")
        // Taken under a new name, with the old contents (written over, not truncated, by the writer).
        #expect(spares.take(as: "\(dir)/journal.9"))
        #expect(FileManager.default.contents(atPath: "\(dir)/journal.9") == Data(paths[0].utf8))
        #expect(spares.take(as: "\(dir)/journal.10") && spares.take(as: "\(dir)/journal.11"))
        spares.removeAll()
        #expect(!spares.take(as: "\(dir)/journal.12"), "none left")
        #expect(names(dir) == ["journal.10", "journal.11", "journal.9"])
    }

    /// A file written over holds the new records and, past them, old ones with good checksums. Here the first old
    /// record left starts exactly where the new one ends (same key and value lengths): only its sequence number,
    /// lower than the one before it, ends the file. Replayed into an index that lost `applied_seq` (every record
    /// replayed, as after a damaged index), the old record would otherwise put the old value back over the new.
    @Test func aFileWrittenOverEndsWhereItsSequenceStopsGrowing() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spares = JournalSpares(directory: dir)
        let writer = try JournalWriter(directory: dir, generation: 1, nextSeq: 1, spares: spares)
        let old = CacheEntry(value: [UInt8](repeating: 1, count: 5000), createdAt: 1, expiresAt: nil)
        let new = CacheEntry(value: [UInt8](repeating: 2, count: 5000), createdAt: 2, expiresAt: nil)
        writer.add(try CacheKey(key: "a"), old)
        writer.add(try CacheKey(key: "k"), old)
        #expect(try writer.write().map(\.seq) == [1, 2])
        let first = writer.seal()
        #expect(spares.retire(first, keep: true))
        writer.add(try CacheKey(key: "k"), new)
        #expect(try writer.write().map(\.seq) == [3])
        let path = dir + "/journal.2"
        #expect(!FileManager.default.fileExists(atPath: first) && names(dir) == ["journal.2"], "the spare was taken")
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect(size == writer.fileBytes * 2, "written over from its start: the old second record is still there")
        #expect(Journal.read(path).map(\.seq) == [3])
        writer.seal()
        // The index never saw these (a fresh one: applied_seq 0), so start-up replays every record it reads.
        let h = try StoreHarness(dir: dir) { $0.memoryBudget = 0 }
        defer { h.store.close() }
        #expect(h.store.notices.contains("replayed 1 journaled sets into the index"), "\(h.store.notices)")
        #expect(try h.get("k")?.0.value == new.value)
        #expect(try h.get("a") == nil)
    }

    /// Start-up deletes the spares a killed daemon left, and a clean stop deletes its own: their room is the disk's.
    @Test func sparesNeverOutliveADaemon() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dir + "/spare-journal.2", contents: Data(count: 4096))
        let h = try StoreHarness(dir: dir)
        #expect(!names(dir).contains("spare-journal.2"), "a killed daemon's spare deleted at start")
        #expect(try h.set("a", [1]))
        _ = FileManager.default.createFile(atPath: dir + "/spare-journal.0", contents: Data(count: 4096))
        h.store.close()
        #expect(!names(dir).contains { $0.hasPrefix("spare-journal.") || $0.hasPrefix("journal.") }, "\(names(dir))")
    }
}
