#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
@testable import FerryVips

@Suite struct WorkerPoolTests {
    /// Never more than `threads` jobs at once, every job run once, results back to their callers.
    @Test func atMostItsThreadsRunAtOnce() async {
        let pool = WorkerPool(threads: 2, name: "test-pool")
        defer { pool.stop() }
        let gauge = Gauge()
        let results = await withTaskGroup(of: Int.self) { group in
            for k in 0..<20 {
                group.addTask {
                    await pool.run {
                        gauge.state.withLock { g in
                            g.now += 1
                            g.most = max(g.most, g.now)
                            g.runs += 1
                        }
                        usleep(2000)
                        gauge.state.withLock { $0.now -= 1 }
                        return k * k
                    }
                }
            }
            var all: [Int] = []
            for await r in group { all.append(r) }
            return all.sorted()
        }
        #expect(results == (0..<20).map { $0 * $0 })
        let g = gauge.state.withLock { $0 }
        #expect(g.runs == 20 && g.most == 2)
    }

    /// After `stop`, work still gets done (on the caller's thread) instead of waiting for ever.
    @Test func workAfterStopRunsOnTheCaller() async {
        let pool = WorkerPool(threads: 1, name: "test-stop")
        pool.stop()
        pool.stop()
        #expect(await pool.run { 42 } == 42)
    }
}

/// How many jobs run now, the most that ever ran at once, and how many ran.
final class Gauge: Sendable {
    let state = Mutex<(now: Int, most: Int, runs: Int)>((0, 0, 0))
}
