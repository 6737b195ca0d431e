import CLibUV

/// The daemon's one libuv loop. Every handle of this target (timers, signals, polls, pipes, the mailbox, the
/// iteration hook) is made on a loop and touched only on the thread that runs it: libuv is not thread-safe, and the
/// only call other threads may make is `LoopMailbox.post`.
///
/// ```swift
/// let loop = EventLoop()
/// let timer = LoopTimer(loop: loop) { t in print("fired at", loop.nowMs); t.close() }
/// timer.start(afterMs: 10)
/// loop.run()   // returns once every handle is closed
/// ```
public final class EventLoop {
    @usableFromInline let raw: UnsafeMutablePointer<uv_loop_t>
    /// The `uv_loop_t` for a C library that attaches to the loop itself (hiredis's libuv adapter, in CFerryRedis).
    public var opaque: UnsafeMutableRawPointer { UnsafeMutableRawPointer(raw) }

    public init() {
        raw = .allocate(capacity: 1)
        uv_loop_init(raw)
    }

    deinit {
        uv_loop_close(raw)
        raw.deallocate()
    }

    /// The loop's clock in milliseconds (monotonic, updated once per iteration: cheap to read, and the same for
    /// every callback of one iteration). Inlinable: as a call into this module, the loop it was asked of was
    /// retained and released around it, at every reply (callgrind).
    @inlinable public var nowMs: UInt64 { uv_now(raw) }

    /// Runs callbacks until no active handle is left.
    public func run() { uv_run(raw, UV_RUN_DEFAULT) }
}

/// libuv's text for an error code (`uv_strerror`).
public func loopErrorText(_ code: Int32) -> String { String(cString: uv_strerror(code)) }

/// Unmanaged helpers for handles whose `data` holds the Swift object that owns them: retained when the handle is
/// made, released in the close callback (the only safe moment to free a handle).
extension UnsafeMutablePointer {
    /// The handle as libuv's base type.
    var asHandle: UnsafeMutablePointer<uv_handle_t> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: uv_handle_t.self) }
    var asStream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: uv_stream_t.self) }
}
