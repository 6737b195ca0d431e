#if canImport(Glibc)
import Glibc
#endif

/// One thread that runs the store's disk work in submission order, in batches: everything queued while the previous
/// batch ran becomes the next batch, one SQLite transaction (group commit). Completions go back to the loop thread
/// through `post`, in order, one hand-off per batch.
///
/// ```swift
/// let worker = DiskWorker(run: { jobs in engine.run(&jobs) }, deliver: { outcome in post { store.apply(outcome) } })
/// worker.submit(.delete(key))
/// ```
final class DiskWorker: @unchecked Sendable {
    typealias Job = DiskJob
    typealias Done = BatchOutcome

    // Heap-allocated: a pthread mutex must not move, and Swift does not promise a stable address for `&property`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queue: [Job] = []
    private var stopping = false
    private var joined = false
    private let run: (inout [Job]) -> Done
    private let deliver: @Sendable (Done) -> Void
    private var thread = pthread_t()

    /// - Parameters:
    ///   - run: executes one batch on the worker thread and returns its outcome (one result per job, in order); the
    ///     batch is its own, so that it may let go of a job's values as soon as the job has run.
    ///   - deliver: hands a batch's outcome to the loop thread.
    init(run: @escaping (inout [Job]) -> Done, deliver: @escaping @Sendable (Done) -> Void) {
        self.run = run
        self.deliver = deliver
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        let me = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, diskWorkerMain, me)
        precondition(rc == 0, "cannot start the disk worker thread: \(rc)")
    }

    func submit(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        pthread_mutex_lock(mutex)
        queue.append(contentsOf: jobs)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Lets the queued work finish, then stops the thread and waits for it.
    func stop() {
        guard !joined else { return }
        joined = true
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        pthread_join(thread, nil)
    }

    /// A test seam: `FERRY_TEST_DISK_DELAY_US` slows every batch by that many microseconds, so that a test can make
    /// the disk slower than the clients (`JournalMemoryTests`) as a full or failing disk would. Read once; 0 unset.
    static let testDelay: UInt32 = getenv("FERRY_TEST_DISK_DELAY_US").flatMap { UInt32(String(cString: $0)) } ?? 0

    fileprivate func loop() {
        while true {
            pthread_mutex_lock(mutex)
            while queue.isEmpty && !stopping { pthread_cond_wait(condition, mutex) }
            var batch: [Job] = []
            swap(&batch, &queue)  // the batch's only reference: `run` frees each job's values as it goes
            let exit = stopping && batch.isEmpty
            pthread_mutex_unlock(mutex)
            if exit { return }
            if DiskWorker.testDelay > 0 { usleep(DiskWorker.testDelay) }
            deliver(run(&batch))
        }
    }
}

/// The worker thread's entry point (a plain function: the compiler of this toolchain crashes on the closure form).
private func diskWorkerMain(_ raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let worker = Unmanaged<DiskWorker>.fromOpaque(raw!).takeRetainedValue()
    worker.loop()
    return nil
}
