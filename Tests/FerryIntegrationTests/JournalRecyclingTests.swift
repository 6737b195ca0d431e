import Foundation
import Synchronization
import Testing
import FerryClient
#if canImport(Glibc)
import Glibc
#endif

/// Journal files are written over again once retired (`JournalSpares`, issue 12): a daemon killed while it writes
/// over one loses no acknowledged set and brings back no old value, although the file holds old records, whole and
/// with good checksums, past the new ones.
extension IntegrationTests {
    @Suite struct JournalRecyclingTests {
        /// Large sets (~64 KiB), mostly to 80 keys, until a retired journal file was taken again as a spare, then
        /// `kill -9`: every acknowledged key holds its last acknowledged version or a later one, untorn.
        @Test func killDashNineWhileJournalFilesAreWrittenOver() async throws {
            let cacheDir = TempDir()
            defer { cacheDir.remove() }
            let daemon = try Daemon(["--cache-dir", cacheDir.path])
            let acked = AckLog()
            let stop = StopFlag()
            let storm = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for c in 0..<4 {
                        group.addTask {
                            let client = try await FerryClient.connect(path: daemon.socket)
                            for version in 0..<1_000_000 where !stop.isSet {
                                // Mostly rewrites of 20 keys; every tenth a key of its own, whose only record may sit in
                                // a sealed file for a while: lost if that file were written over before being applied.
                                let key = version % 10 == 0 ? "c\(c)-once\(version)" : "c\(c)-k\(version % 20)"
                                guard (try? await client.cacheSet(key, CacheTests.value(key: key, version: version, base: Self.base))) == true else { return }
                                acked.record(key, version)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            // A spare taken is a spare count going down while the daemon runs (only the loop takes them).
            var spares = 0
            var taken = false
            let deadline = Date().addingTimeInterval(60)
            while !taken && Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
                let now = Self.spareCount(cacheDir.path)
                taken = now < spares
                spares = now
            }
            try await Task.sleep(for: .milliseconds(300))  // well into the file written over
            daemon.signal(SIGKILL)
            stop.set()
            _ = await storm.result
            try #require(taken, "no retired journal file was written over in 60 s")
            let again = try Daemon(["--cache-dir", cacheDir.path])
            defer { again.stop() }
            let client = try await FerryClient.connect(path: again.socket)
            defer { client.close() }
            try await acked.expectSurvived(in: client) { CacheTests.version(of: $0, key: $1, base: Self.base) }
            #expect(Self.spareCount(cacheDir.path) == 0, "start-up deletes a killed daemon's spares")
        }

        final class StopFlag: Sendable {
            private let state = Mutex(false)
            var isSet: Bool { state.withLock { $0 } }
            func set() { state.withLock { $0 = true } }
        }

        static func spareCount(_ dir: String) -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).count { $0.hasPrefix("spare-journal.") }
        }

        /// Values of 60,000 to 63,000 bytes, each carrying its key, version and a checksum (`CacheTests.value`).
        static let base = 60_000
    }
}
