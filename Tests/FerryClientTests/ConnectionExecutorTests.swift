#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
@testable import FerryClient

/// `ConnectionExecutor` driven by a stand-in reader thread that does what `ClientConnection.readLoop` does with it:
/// polls the wake pipe and runs the queued jobs. No socket.
@Suite(.timeLimit(.minutes(1))) struct ConnectionExecutorTests {
    /// A thread playing the reader: registers itself, then polls and runs jobs until stopped.
    final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    final class Reader: @unchecked Sendable {
        let executor: ConnectionExecutor
        let wakes = Count()
        let stop = Atomic<Bool>(false)
        let thread = Atomic<UInt>(0)
        let turns = Atomic<Int>(0)
        let ended = Atomic<Bool>(false)

        init() {
            let wakes = self.wakes
            executor = ConnectionExecutor(onWake: { wakes.value.add(1, ordering: .relaxed) })
        }

        func start() {
            Platform.startThread { [self] in
                executor.readerStarted()
                thread.store(UInt(pthread_self()), ordering: .releasing)
                while !stop.load(ordering: .acquiring) {
                    var p = pollfd(fd: executor.wakeFD, events: Int16(POLLIN), revents: 0)
                    _ = poll(&p, 1, executor.hasJobs ? 0 : 50)
                    if p.revents != 0 { executor.drainWake() }
                    turns.add(executor.runJobs(), ordering: .relaxed)
                }
                executor.readerEnded()
                ended.store(true, ordering: .releasing)
            }
            while thread.load(ordering: .acquiring) == 0 { usleep(1000) }
        }
    }

    @Test func tasksThatPreferItRunOnTheReaderThreadAndWakeIt() async {
        let reader = Reader()
        reader.start()
        defer { reader.stop.store(true, ordering: .releasing) }
        let ran = await Task(executorPreference: reader.executor) { UInt(pthread_self()) }.value
        #expect(ran == reader.thread.load(ordering: .acquiring))
        #expect(reader.wakes.value.load(ordering: .relaxed) >= 1, "a job from another thread wakes the reader")
        // Many tasks, each suspending and resuming on it: every step runs there.
        let threads = await withTaskGroup(of: Set<UInt>.self) { group in
            for _ in 0..<20 {
                group.addTask(executorPreference: reader.executor) {
                    var seen: Set<UInt> = [UInt(pthread_self())]
                    for _ in 0..<10 {
                        await Task.yield()
                        seen.insert(UInt(pthread_self()))
                    }
                    return seen
                }
            }
            return await group.reduce(into: Set<UInt>()) { $0.formUnion($1) }
        }
        #expect(threads == [reader.thread.load(ordering: .acquiring)])
        #expect(reader.turns.load(ordering: .relaxed) >= 20 * 11)
    }

    @Test func onceTheReaderEndsTasksRunOnTheGlobalExecutor() async {
        let reader = Reader()
        reader.start()
        reader.stop.store(true, ordering: .releasing)
        while !reader.ended.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(5)) }
        let ran = await Task(executorPreference: reader.executor) { UInt(pthread_self()) }.value
        #expect(ran != reader.thread.load(ordering: .acquiring), "forwarded, not lost")
    }
}
