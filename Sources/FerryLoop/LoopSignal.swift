import CLibUV

/// A libuv signal watcher calling a Swift closure on the loop thread; lifetime as `LoopTimer`.
///
/// ```swift
/// let s = LoopSignal(loop: loop, signal: SIGTERM) { signo in beginShutdown(signo) }
/// s.close()
/// ```
public final class LoopSignal {
    private let handle: UnsafeMutablePointer<uv_signal_t>
    private var callback: ((Int32) -> Void)?
    private var closed = false

    public init(loop: EventLoop, signal: Int32, _ callback: @escaping (Int32) -> Void) {
        handle = .allocate(capacity: 1)
        uv_signal_init(loop.raw, handle)
        self.callback = callback
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        uv_signal_start(handle, { h, signum in
            let me = Unmanaged<LoopSignal>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            me.callback?(signum)
        }, signal)
    }

    public func close() {
        guard !closed else { return }
        closed = true
        callback = nil
        uv_close(handle.asHandle) { h in
            let me = Unmanaged<LoopSignal>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.handle.deallocate()
        }
    }
}
