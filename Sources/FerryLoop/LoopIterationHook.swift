import CLibUV

/// Runs a closure once per loop iteration, after I/O callbacks (`uv_check`) and before the loop blocks
/// (`uv_prepare`): the place where replies produced anywhere in the iteration are flushed in one write per
/// connection, as redis does in `beforeSleep`.
///
/// ```swift
/// let hook = LoopIterationHook(loop: loop) { flushEverything() }
/// hook.close()
/// ```
public final class LoopIterationHook {
    private let check: UnsafeMutablePointer<uv_check_t>
    private let prepare: UnsafeMutablePointer<uv_prepare_t>
    private var callback: (() -> Void)?

    public init(loop: EventLoop, _ callback: @escaping () -> Void) {
        check = .allocate(capacity: 1)
        prepare = .allocate(capacity: 1)
        self.callback = callback
        uv_check_init(loop.raw, check)
        uv_prepare_init(loop.raw, prepare)
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

    public func close() {
        guard callback != nil else { return }
        callback = nil
        uv_close(check.asHandle) { h in
            UnsafeMutableRawPointer(h!).assumingMemoryBound(to: uv_check_t.self).deallocate()
        }
        // The retained reference is given back when the second handle is closed.
        uv_close(prepare.asHandle) { h in
            let me = Unmanaged<LoopIterationHook>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.prepare.deallocate()
        }
    }
}
