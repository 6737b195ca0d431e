import Foundation
import Testing
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Journaled sets are acknowledged before the disk worker applies them, and held in memory until it does: a client
/// that sets faster than the disk takes its values must not grow the daemon past `--buffer-limit` (issue 12). Before,
/// 1 KB sets to a million distinct keys grew ferryd to 1.27 GB at the default 256 MiB memory limit.
extension IntegrationTests {
    @Suite struct JournalMemoryTests {
        /// A disk made slow (every batch of the worker waits 20 ms) and 1,200 distinct 64 KiB values (75 MiB) sent
        /// 40 at a time: every set is acknowledged, and ferryd's peak memory grows by far less than what was sent.
        @Test func aWriterFasterThanTheDiskCannotGrowTheDaemonPastItsBufferLimit() throws {
            let daemon = try Daemon(["--memory-limit", "0", "--buffer-limit", "8MiB", "--max-value-bytes", "1MiB"],
                                    environment: ["FERRY_TEST_DISK_DELAY_US": "20000"])
            defer { daemon.stop() }
            let before = peakKiB(daemon.pid)
            let writer = try RawSocket(daemon.socket, timeoutSeconds: 60)
            try writer.hello()
            let value = [UInt8](repeating: 0x5A, count: 64 * 1024)
            var id: Int64 = 10
            for _ in 0..<30 {
                var frames: [UInt8] = []
                for _ in 0..<40 {
                    id += 1
                    frames += FrameEncoder.encode(json: ["id": .int(id), "op": "cache.set", "args": ["key": .string("v\(id)")]], body: value)
                }
                try writer.send(frames)
                for _ in 0..<40 {
                    let reply = try #require(try writer.readReply())
                    guard case .result = reply else { Issue.record("a set was refused: \(reply)"); return }
                }
            }
            let grew = peakKiB(daemon.pid) - before
            #expect(grew < 40 * 1024, "ferryd's peak grew by \(grew) KiB while 75 MiB were set with an 8 MiB buffer limit")
        }

        /// The peak resident size of a process in KiB (`VmHWM`).
        func peakKiB(_ pid: pid_t) -> Int {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
            for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
                return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            }
            return 0
        }
    }
}
