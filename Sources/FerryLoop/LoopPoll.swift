import CLibUV

/// Watches one socket that someone else owns (libcurl's connections) for readability and writability: a libuv
/// `uv_poll` calling a Swift closure on the loop thread. Lifetime as `LoopTimer`: alive until `close()` has run
/// through libuv's close callback.
///
/// ```swift
/// guard let poll = LoopPoll(loop: loop, socket: fd, { status, events in ... }) else { return }
/// poll.start([.readable])
/// poll.close()   // before the socket is closed by its owner
/// ```
public final class LoopPoll {
    public struct Events: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: Int32(UV_READABLE.rawValue))
        public static let writable = Events(rawValue: Int32(UV_WRITABLE.rawValue))
    }

    public let socket: Int32
    private let handle: UnsafeMutablePointer<uv_poll_t>
    /// Gets libuv's status (negative: an error on the socket) and the events that are ready.
    private var callback: ((Int32, Events) -> Void)?

    /// Nil when libuv cannot watch the socket.
    public init?(loop: EventLoop, socket: Int32, _ callback: @escaping (Int32, Events) -> Void) {
        let handle = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
        guard uv_poll_init_socket(loop.raw, handle, socket) == 0 else {
            handle.deallocate()
            return nil
        }
        self.handle = handle
        self.socket = socket
        self.callback = callback
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// Starts or changes what is watched.
    public func start(_ events: Events) {
        guard callback != nil else { return }
        uv_poll_start(handle, events.rawValue) { p, status, events in
            let me = Unmanaged<LoopPoll>.fromOpaque(p!.pointee.data).takeUnretainedValue()
            me.callback?(status, Events(rawValue: events))
        }
    }

    public func close() {
        guard callback != nil else { return }
        callback = nil
        uv_poll_stop(handle)
        uv_close(handle.asHandle) { h in
            let me = Unmanaged<LoopPoll>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.handle.deallocate()
        }
    }
}
