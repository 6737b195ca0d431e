#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFerryIO
import Synchronization

/// Runs tasks on the connection's reader thread, between its reads (`FerryClient.executor`).
///
/// Why: a call resumed by the reader thread otherwise goes to the global executor: the reader queues the task
/// there and a worker thread runs it and sends the next request. A task that prefers this executor is resumed where
/// its reply was read: the reader runs it right after the read, and writes every request those tasks sent in one
/// go before it reads again — the loop of a hand-written pipelined client. (When this was written the hop cost half
/// of a pipelined call; since the last call of a batch reads the next replies itself, `ReadBaton`, plain tasks are
/// as fast: BENCHMARKS.md.)
///
/// The rule is an event loop's: a job that blocks the thread (blocking I/O, a long computation) stops the
/// connection's replies for everyone. Await, don't block.
///
/// ```swift
/// try await withTaskExecutorPreference(client.executor) {
///     for key in keys { _ = try await client.cacheGet(key) }   // runs on the reader thread
/// }
/// ```
final class ConnectionExecutor: TaskExecutor, @unchecked Sendable {
    private struct Queue {
        var jobs: [UnownedJob] = []
        /// The reader thread has ended (the connection is gone): jobs go to the global executor instead, so that a
        /// task preferring this executor still runs — to see its calls fail.
        var forwarding = false
    }
    private let queue = ThreadLock(Queue())
    /// The jobs of one turn, swapped out of the queue (the reader thread's own: two arrays, no allocation per turn).
    private var running: [UnownedJob] = []
    /// A pipe written when a job comes from another thread while the reader may sleep; the reader polls its read
    /// end. Without one (the process out of descriptors) every job goes to the global executor: slower, never stuck.
    let wakeFD: Int32
    private let wakeWriteFD: Int32
    /// The reader thread, once it runs (`pthread_t` as an integer; 0 before).
    private let reader = Atomic<UInt>(0)

    /// Also called on a wake-up: the reader may be waiting elsewhere than in `poll` (for read credit).
    private let onWake: @Sendable () -> Void

    init(onWake: @escaping @Sendable () -> Void) {
        var fds: [Int32] = [-1, -1]
        if ferry_wake_pipe(&fds) != 0 { fds = [-1, -1] }
        (wakeFD, wakeWriteFD) = (fds[0], fds[1])
        self.onWake = onWake
        if wakeFD < 0 { queue.withLock { $0.forwarding = true } }
    }

    deinit {
        if wakeFD >= 0 { close(wakeFD) }
        if wakeWriteFD >= 0 { close(wakeWriteFD) }
    }

    /// Called by the reader thread when it starts.
    func readerStarted() { reader.store(UInt(pthread_self()), ordering: .releasing) }

    /// Whether the caller is the reader thread (which must never block on a write: see `Outbox`).
    var onReaderThread: Bool { reader.load(ordering: .acquiring) == UInt(pthread_self()) }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let first = queue.withLock { q -> Bool? in
            if q.forwarding { return nil }
            q.jobs.append(unowned)
            return q.jobs.count == 1
        }
        guard let first else { return globalConcurrentExecutor.enqueue(ExecutorJob(unowned)) }
        if first && !onReaderThread { wake() }
    }

    /// The reader thread ends: jobs queued now and later run on the global executor.
    func readerEnded() {
        let left = queue.withLock { q -> [UnownedJob] in
            q.forwarding = true
            defer { q.jobs = [] }
            return q.jobs
        }
        for job in left { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor { UnownedTaskExecutor(ordinary: self) }

    /// Whether jobs wait to run.
    var hasJobs: Bool { queue.withLock { !$0.jobs.isEmpty } }

    /// Runs the jobs queued now (not the ones they queue: those wait for the next turn, after a read); how many.
    @discardableResult
    func runJobs() -> Int {
        queue.withLock { q in swap(&q.jobs, &running) }
        let me = asUnownedTaskExecutor()
        for job in running { job.runSynchronously(on: me) }
        defer { running.removeAll(keepingCapacity: true) }
        return running.count
    }

    /// Clears a wake-up the reader has seen.
    func drainWake() {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &bytes, { read(wakeFD, $0.baseAddress, $0.count) }) == 32 {}
    }

    /// Wakes the reader thread wherever it waits (its poll, read credit): a baton given back, the connection closed.
    func wakeReader() { wake() }

    private func wake() {
        var one: UInt8 = 1
        _ = write(wakeWriteFD, &one, 1)
        onWake()
    }
}
