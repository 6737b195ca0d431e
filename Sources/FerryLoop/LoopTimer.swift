import CLibUV

/// A libuv timer that calls a Swift closure. The object keeps itself alive (a retained pointer in `handle.data`)
/// until `close()` has run through libuv's close callback, which is the only safe moment to free the handle.
///
/// ```swift
/// let t = LoopTimer(loop: loop) { _ in print("fired") }
/// t.start(afterMs: 100)
/// ...
/// t.close()
/// ```
public final class LoopTimer {
    private let handle: UnsafeMutablePointer<uv_timer_t>
    private var callback: ((LoopTimer) -> Void)?
    private var closed = false

    /// `callback` gets the timer itself, so a one-shot timer can close itself when it fires.
    public init(loop: EventLoop, _ callback: @escaping (LoopTimer) -> Void) {
        handle = .allocate(capacity: 1)
        uv_timer_init(loop.raw, handle)
        self.callback = callback
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// (Re)arms the timer; a timer already armed is moved.
    public func start(afterMs ms: UInt64) {
        guard !closed else { return }
        uv_timer_start(handle, { h in
            let me = Unmanaged<LoopTimer>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            me.callback?(me)
        }, ms, 0)
    }

    public func stop() {
        guard !closed else { return }
        uv_timer_stop(handle)
    }

    /// Stops the timer for good; the closure (and what it captured) is released now, the handle after libuv is done.
    public func close() {
        guard !closed else { return }
        closed = true
        callback = nil
        uv_close(handle.asHandle) { h in
            let me = Unmanaged<LoopTimer>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.handle.deallocate()
        }
    }
}
