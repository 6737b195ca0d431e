#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a pthread mutex, with `Mutex`'s `withLock`.
///
/// Why not `Synchronization.Mutex`: on contention it spins before it sleeps. The client's threads — the reader
/// and the pool's threads running calls — often share one core (a pinned client, a busy machine), where a spinner
/// only burns the time slice the holder needs to let go: measured, 6–13 % of the client's time in `_lockSlow`.
/// glibc's default mutex sleeps at once, which hands the core to the holder.
///
/// ```swift
/// let counter = ThreadLock(0)
/// counter.withLock { $0 += 1 }
/// ```
final class ThreadLock<Value>: @unchecked Sendable {
    private var value: Value
    /// Allocated: a pthread mutex must not move, and a stored property's address is not stable.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// `withLock`, unless another thread holds the lock: then nil at once.
    func withLockIfFree<Result>(_ body: (inout Value) -> Result) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return body(&value)
    }

    func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
