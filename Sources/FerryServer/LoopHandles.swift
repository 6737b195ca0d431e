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
final class LoopTimer {
    private let handle: UnsafeMutablePointer<uv_timer_t>
    private var callback: ((LoopTimer) -> Void)?
    private var closed = false

    /// `callback` gets the timer itself, so a one-shot timer can close itself when it fires.
    init(loop: UnsafeMutablePointer<uv_loop_t>, _ callback: @escaping (LoopTimer) -> Void) {
        handle = .allocate(capacity: 1)
        uv_timer_init(loop, handle)
        self.callback = callback
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// (Re)arms the timer; a timer already armed is moved.
    func start(afterMs ms: UInt64) {
        guard !closed else { return }
        uv_timer_start(handle, { h in
            let me = Unmanaged<LoopTimer>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            me.callback?(me)
        }, ms, 0)
    }

    func stop() {
        guard !closed else { return }
        uv_timer_stop(handle)
    }

    /// Stops the timer for good; the closure (and what it captured) is released now, the handle after libuv is done.
    func close() {
        guard !closed else { return }
        closed = true
        callback = nil
        uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { h in
            let me = Unmanaged<LoopTimer>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.handle.deallocate()
        }
    }
}

/// A libuv signal watcher calling a Swift closure; lifetime as `LoopTimer`.
final class LoopSignal {
    private let handle: UnsafeMutablePointer<uv_signal_t>
    private var callback: ((Int32) -> Void)?
    private var closed = false

    init(loop: UnsafeMutablePointer<uv_loop_t>, signal: Int32, _ callback: @escaping (Int32) -> Void) {
        handle = .allocate(capacity: 1)
        uv_signal_init(loop, handle)
        self.callback = callback
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        uv_signal_start(handle, { h, signum in
            let me = Unmanaged<LoopSignal>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            me.callback?(signum)
        }, signal)
    }

    func close() {
        guard !closed else { return }
        closed = true
        callback = nil
        uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { h in
            let me = Unmanaged<LoopSignal>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.handle.deallocate()
        }
    }
}

/// Runs a closure once per loop iteration, after I/O callbacks (`uv_check`) and before the loop blocks
/// (`uv_prepare`): the place where replies produced anywhere in the iteration are flushed in one write per
/// connection, as redis does in `beforeSleep`.
final class LoopIterationHook {
    private let check: UnsafeMutablePointer<uv_check_t>
    private let prepare: UnsafeMutablePointer<uv_prepare_t>
    private var callback: (() -> Void)?

    init(loop: UnsafeMutablePointer<uv_loop_t>, _ callback: @escaping () -> Void) {
        check = .allocate(capacity: 1)
        prepare = .allocate(capacity: 1)
        self.callback = callback
        uv_check_init(loop, check)
        uv_prepare_init(loop, prepare)
        let me = Unmanaged.passRetained(self).toOpaque()
        check.pointee.data = me
        prepare.pointee.data = me
        uv_check_start(check) { h in
            Unmanaged<LoopIterationHook>.fromOpaque(h!.pointee.data).takeUnretainedValue().callback?()
        }
        uv_prepare_start(prepare) { h in
            Unmanaged<LoopIterationHook>.fromOpaque(h!.pointee.data).takeUnretainedValue().callback?()
        }
    }

    func close() {
        guard callback != nil else { return }
        callback = nil
        uv_close(UnsafeMutableRawPointer(check).assumingMemoryBound(to: uv_handle_t.self)) { h in
            UnsafeMutableRawPointer(h!).assumingMemoryBound(to: uv_check_t.self).deallocate()
        }
        // The retained reference is given back when the second handle is closed.
        uv_close(UnsafeMutableRawPointer(prepare).assumingMemoryBound(to: uv_handle_t.self)) { h in
            let me = Unmanaged<LoopIterationHook>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.prepare.deallocate()
        }
    }
}
