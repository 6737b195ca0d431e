#if canImport(Glibc)
import Glibc
#endif
import CLibUV

/// Why a listening socket could not be set up: the libuv error and its text.
public struct LoopError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public var description: String { loopErrorText(code) }
}

/// A listening Unix socket: bound with mode 0600 from the start, it calls back on each pending connection, and
/// `accept` turns one into a `LoopPipe`.
///
/// ```swift
/// let listener = LoopPipeListener(loop: loop)
/// try listener.bind(path: "/tmp/f.sock")
/// try listener.listen(backlog: 4096) { status in if status == 0, let pipe = listener.accept() { ... } }
/// listener.close()
/// ```
public final class LoopPipeListener {
    private let loop: EventLoop
    private let handle: UnsafeMutablePointer<uv_pipe_t>
    private var onConnection: ((Int32) -> Void)?
    private var closed = false

    public init(loop: EventLoop) {
        self.loop = loop
        handle = .allocate(capacity: 1)
        uv_pipe_init(loop.raw, handle, 0)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// Binds with the umask at 0177 around the call, so there is no moment when others could connect.
    public func bind(path: String) throws(LoopError) {
        let oldMask = umask(0o177)
        let rc = uv_pipe_bind(handle, path)
        umask(oldMask)
        if rc != 0 { throw LoopError(code: rc) }
    }

    /// Takes a socket already bound and listening, handed over by systemd (`LISTEN_FDS`), instead of binding one.
    public func open(descriptor fd: Int32) throws(LoopError) {
        let rc = uv_pipe_open(handle, fd)
        if rc != 0 { throw LoopError(code: rc) }
    }

    /// Starts listening; `onConnection` gets 0 for each connection waiting to be accepted (or a libuv error).
    public func listen(backlog: Int32, _ onConnection: @escaping (Int32) -> Void) throws(LoopError) {
        self.onConnection = onConnection
        let rc = uv_listen(handle.asStream, backlog) { s, status in
            Unmanaged<LoopPipeListener>.fromOpaque(s!.pointee.data).takeUnretainedValue().onConnection?(status)
        }
        if rc != 0 { throw LoopError(code: rc) }
    }

    /// The next waiting connection, or nil (its handle is closed again).
    public func accept() -> LoopPipe? {
        guard !closed else { return nil }
        let pipe = LoopPipe(loop: loop)
        guard uv_accept(handle.asStream, pipe.handle.asStream) == 0 else {
            pipe.close()
            return nil
        }
        return pipe
    }

    public func close() {
        guard !closed else { return }
        closed = true
        onConnection = nil
        uv_close(handle.asHandle) { h in
            let me = Unmanaged<LoopPipeListener>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.handle.deallocate()
        }
    }
}
