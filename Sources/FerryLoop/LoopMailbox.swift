import CLibUV
import Synchronization

/// How other threads hand work back to the loop thread: they `post` a closure, `uv_async_send` wakes the loop, and
/// the loop runs every queued closure (several sends coalesce into one callback, so it drains the whole queue).
/// `post` is the only method safe to call from any thread.
///
/// ```swift
/// let mailbox = LoopMailbox(loop: loop)
/// let post = mailbox.post
/// Task.detached { let r = await work(); post { deliver(r) } }   // deliver runs on the loop thread
/// ```
public final class LoopMailbox: @unchecked Sendable {  // `handle` is touched off the loop only by uv_async_send, which libuv allows
    private let handle: UnsafeMutablePointer<uv_async_t>
    private let queue = Mutex<[@Sendable () -> Void]>([])
    private let closed = Mutex(false)

    public init(loop: EventLoop) {
        handle = .allocate(capacity: 1)
        uv_async_init(loop.raw, handle) { h in
            Unmanaged<LoopMailbox>.fromOpaque(h!.pointee.data).takeUnretainedValue().drain()
        }
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// Queues `job` to run on the loop thread. After `close`, jobs are dropped.
    public var post: @Sendable (@escaping @Sendable () -> Void) -> Void {
        { [self] job in
            queue.withLock { $0.append(job) }
            closed.withLock { isClosed in
                if !isClosed { uv_async_send(handle) }
            }
        }
    }

    private func drain() {
        let jobs = queue.withLock { q -> [@Sendable () -> Void] in
            defer { q.removeAll(keepingCapacity: true) }
            return q
        }
        for job in jobs { job() }
    }

    /// Loop thread only. Runs what is queued, then releases the handle.
    public func close() {
        let already = closed.withLock { isClosed -> Bool in
            defer { isClosed = true }
            return isClosed
        }
        guard !already else { return }
        drain()
        uv_close(handle.asHandle) { h in
            let me = Unmanaged<LoopMailbox>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.handle.deallocate()
        }
    }
}
