#if canImport(Glibc)
import Glibc
#endif

/// A fixed number of threads that run blocking work (libvips decodes and resizes) in submission order, so that
/// at most `threads` of them run at once — which is what bounds the memory they take — and none runs on the loop
/// thread or on an actor's executor.
///
/// ```swift
/// let pool = WorkerPool(threads: 2, name: "ferry-image")
/// let sum = await pool.run { (1...100).reduce(0, +) }   // 5050, computed on one of the pool's threads
/// pool.stop()                                            // runs what is queued, then joins the threads
/// ```
public final class WorkerPool: @unchecked Sendable {
    private typealias Job = () -> Void

    // Heap-allocated: a pthread mutex must not move.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queue: [Job] = []
    private var head = 0
    private var stopping = false
    private var threads: [pthread_t] = []
    /// Jobs running now (for stats and tests).
    private var running = 0

    public let size: Int
    public let name: String

    /// - Parameter name: what the threads are for, in messages.
    public init(threads: Int, name: String) {
        self.name = name
        size = max(1, threads)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        for _ in 0..<size {
            var thread = pthread_t()
            let context = Unmanaged.passRetained(self).toOpaque()
            let rc = pthread_create(&thread, nil, workerPoolMain, context)
            precondition(rc == 0, "cannot start a worker thread: \(rc)")
            self.threads.append(thread)
        }
    }

    deinit {
        pthread_mutex_destroy(mutex)
        pthread_cond_destroy(condition)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Runs `work` on a pool thread and returns its result. After `stop`, runs it on the caller's thread.
    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            if !submit({ continuation.resume(returning: work()) }) { continuation.resume(returning: work()) }
        }
    }

    /// How many jobs wait and run now.
    public var load: (queued: Int, running: Int) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return (queue.count - head, running)
    }

    /// Lets the queued work finish, then stops the threads and waits for them. Idempotent.
    public func stop() {
        pthread_mutex_lock(mutex)
        let already = stopping
        stopping = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
        guard !already else { return }
        for thread in threads { pthread_join(thread, nil) }
    }

    private func submit(_ job: @escaping Job) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !stopping else { return false }
        queue.append(job)
        pthread_cond_signal(condition)
        return true
    }

    fileprivate func work() {
        while true {
            pthread_mutex_lock(mutex)
            while head == queue.count && !stopping { pthread_cond_wait(condition, mutex) }
            if head == queue.count {
                pthread_mutex_unlock(mutex)
                return
            }
            let job = queue[head]
            head += 1
            if head == queue.count { (queue, head) = ([], 0) }
            running += 1
            pthread_mutex_unlock(mutex)
            job()
            pthread_mutex_lock(mutex)
            running -= 1
            pthread_mutex_unlock(mutex)
        }
    }
}

/// A worker thread's entry point (a plain function: the compiler of this toolchain crashes on the closure form).
private func workerPoolMain(_ raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let pool = Unmanaged<WorkerPool>.fromOpaque(raw!).takeRetainedValue()
    pool.work()
    return nil
}
