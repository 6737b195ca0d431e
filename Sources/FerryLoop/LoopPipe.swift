#if canImport(Glibc)
import Glibc
#endif
import CLibUV
import CFerryIO

/// What a `LoopPipe` tells its owner, on the loop thread.
public protocol LoopPipeDelegate: AnyObject {
    /// Where the next read may put its bytes.
    func pipeReadSpace() -> UnsafeMutableRawBufferPointer
    /// `n > 0`: that many bytes were read into the last read space; `n < 0`: a libuv error, `LoopPipe.endOfFile`
    /// when the peer closed its side.
    func pipeDidRead(_ n: Int)
    /// A queued write (`write(copying:)`) of `count` bytes is done; `status < 0`: it failed.
    func pipeDidWrite(count: Int, status: Int32)
}

/// One accepted Unix-socket connection: reads into the delegate's buffer, writes without a copy when the kernel
/// takes the bytes at once (`tryWrite`), and with one owned copy otherwise (`write(copying:)`).
///
/// Lifetime: the pipe is retained by its handle from accept until libuv's close callback, and it holds its
/// delegate strongly until then, so no callback ever reaches a freed object.
///
/// ```swift
/// let pipe = listener.accept()!
/// pipe.delegate = connection
/// pipe.startReading()
/// let n = bytes.withUnsafeBytes { pipe.tryWrite($0) }   // then write(copying:) the rest
/// pipe.close()
/// ```
public final class LoopPipe {
    /// The `nread` of a clean end of stream.
    public static let endOfFile = Int(UV_EOF.rawValue)
    /// The `pipeDidWrite` status of a queued write the pipe closed before it was written.
    public static let cancelled = Int32(UV_ECANCELED.rawValue)
    /// The `tryWrite` result when the kernel takes nothing now.
    static let wouldBlock = Int(UV_EAGAIN.rawValue)

    let handle: UnsafeMutablePointer<uv_pipe_t>
    public var delegate: LoopPipeDelegate?
    public private(set) var isClosed = false

    init(loop: EventLoop) {
        handle = .allocate(capacity: 1)
        uv_pipe_init(loop.raw, handle, 0)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    public func startReading() {
        guard !isClosed else { return }
        // The pipe borrowed, not retained (`_withUnsafeGuaranteedRef`): the handle's data is valid until the close
        // callback, and each read cost two retains and releases of it (callgrind).
        uv_read_start(handle.asStream, { h, _, buf in
            let space = Unmanaged<LoopPipe>.fromOpaque(h!.pointee.data)._withUnsafeGuaranteedRef { me in
                me.delegate?.pipeReadSpace() ?? UnsafeMutableRawBufferPointer(start: nil, count: 0)
            }
            buf!.pointee = uv_buf_init(space.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(space.count))
        }, { s, nread, _ in
            // libuv may report 0 (EAGAIN) after handing out space: nothing happened.
            guard nread != 0 else { return }
            Unmanaged<LoopPipe>.fromOpaque(s!.pointee.data)._withUnsafeGuaranteedRef { me in me.delegate?.pipeDidRead(nread) }
        })
    }

    public func stopReading() {
        guard !isClosed else { return }
        uv_read_stop(handle.asStream)
    }

    /// Writes what the kernel takes now: the bytes written (0 when it would block), or a negative libuv error.
    public func tryWrite(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard !isClosed, let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        var buf = uv_buf_init(UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: CChar.self)), UInt32(bytes.count))
        let n = Int(uv_try_write(handle.asStream, &buf, 1))
        return n == LoopPipe.wouldBlock ? 0 : n
    }

    /// Writes what the kernel takes now of `first` then `second` (one `writev`): the bytes written (0 when it would
    /// block), or a negative libuv error. Lets a frame's head and a body that lives elsewhere go out without being
    /// joined first.
    public func tryWrite(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int {
        guard !isClosed, let a = first.baseAddress, let b = second.baseAddress, first.count > 0, second.count > 0 else {
            return 0
        }
        var bufs = [uv_buf_init(UnsafeMutablePointer(mutating: a.assumingMemoryBound(to: CChar.self)), UInt32(first.count)),
                    uv_buf_init(UnsafeMutablePointer(mutating: b.assumingMemoryBound(to: CChar.self)), UInt32(second.count))]
        let n = Int(uv_try_write(handle.asStream, &bufs, 2))
        return n == LoopPipe.wouldBlock ? 0 : n
    }

    /// Writes what the kernel takes now of `bytes` with the descriptor `fd` attached to the first of them
    /// (`SCM_RIGHTS`: the peer receives its own copy; `fd` stays open here). Returns the bytes written (> 0: the
    /// descriptor went with them), 0 when the kernel takes nothing now (the descriptor neither), or a negative errno.
    /// Only while no `write(copying:)` is queued: those bytes would otherwise be overtaken.
    public func tryWrite(_ bytes: UnsafeRawBufferPointer, attaching fd: Int32) -> Int {
        var sock: uv_os_fd_t = -1
        guard !isClosed, let base = bytes.baseAddress, bytes.count > 0, fd >= 0,
              uv_stream_get_write_queue_size(handle.asStream) == 0, uv_fileno(handle.asHandle, &sock) == 0 else { return 0 }
        return ferry_send_with_fd(sock, base, bytes.count, fd)
    }

    /// Layout of one queued write: the libuv request, the byte count, the owner of kept bytes (or nil), then the
    /// copied bytes, in one allocation.
    private static let countAt = MemoryLayout<uv_write_t>.stride
    private static let ownerAt = countAt + MemoryLayout<Int>.stride
    private static let headerSize = ownerAt + MemoryLayout<UnsafeMutableRawPointer?>.stride

    /// Queues a copy of `bytes`; the delegate hears `pipeDidWrite` when it is written. False when libuv refused
    /// the write (the caller closes the pipe).
    public func write(copying bytes: UnsafeRawBufferPointer) -> Bool {
        write(copying: bytes, thenKeeping: UnsafeRawBufferPointer(start: nil, count: 0), owner: nil)
    }

    /// Queues a copy of `head` and then `kept` as it is, without a copy: `owner` (whatever keeps `kept`'s memory
    /// alive and unchanged, e.g. the array it lies in) is retained until libuv is done with it. Why: a 10 MB body
    /// goes out in 256 KiB pieces, and the part of each the kernel did not take at once was copied twice (into the
    /// output, then into a queued write), 5 % of ferryd on a 10 MB hit (perf). The delegate hears `pipeDidWrite`
    /// with both counts together. False when libuv refused the write (the caller closes the pipe).
    public func write(copying head: UnsafeRawBufferPointer, thenKeeping kept: UnsafeRawBufferPointer, owner: AnyObject?) -> Bool {
        let copied = head.count, keptCount = kept.baseAddress == nil ? 0 : kept.count
        guard !isClosed, copied + keptCount > 0, keptCount == 0 || owner != nil else { return false }
        let block = UnsafeMutableRawPointer.allocate(byteCount: LoopPipe.headerSize + copied, alignment: 16)
        let request = block.assumingMemoryBound(to: uv_write_t.self)
        (block + LoopPipe.countAt).storeBytes(of: copied + keptCount, as: Int.self)
        let held = keptCount > 0 ? owner.map { Unmanaged.passRetained($0).toOpaque() } : nil
        (block + LoopPipe.ownerAt).storeBytes(of: held, as: UnsafeMutableRawPointer?.self)
        let copy = block + LoopPipe.headerSize
        if copied > 0 { copy.copyMemory(from: head.baseAddress!, byteCount: copied) }
        request.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        var bufs = (uv_buf_init(copy.assumingMemoryBound(to: CChar.self), UInt32(copied)),
                    uv_buf_init(UnsafeMutablePointer(mutating: kept.baseAddress?.assumingMemoryBound(to: CChar.self)), UInt32(keptCount)))
        let rc = withUnsafeMutableBytes(of: &bufs) { raw -> Int32 in
            let all = raw.baseAddress!.assumingMemoryBound(to: uv_buf_t.self)
            // Empty parts are left out: libuv accepts them, but a write of nothing needs no buffer.
            let first = copied > 0 ? all : all + 1
            let count: UInt32 = (copied > 0 ? 1 : 0) + (keptCount > 0 ? 1 : 0)
            return uv_write(request, handle.asStream, first, count) { req, status in
                let block = UnsafeMutableRawPointer(req!)
                let count = (block + LoopPipe.countAt).load(as: Int.self)
                if let held = (block + LoopPipe.ownerAt).load(as: UnsafeMutableRawPointer?.self) {
                    Unmanaged<AnyObject>.fromOpaque(held).release()
                }
                let me = Unmanaged<LoopPipe>.fromOpaque(req!.pointee.data).takeUnretainedValue()
                block.deallocate()
                me.delegate?.pipeDidWrite(count: count, status: status)
            }
        }
        if rc != 0 {
            if let held { Unmanaged<AnyObject>.fromOpaque(held).release() }
            block.deallocate()
            return false
        }
        return true
    }

    /// Asks the kernel for room for `bytes` of unread output on this socket (SO_SNDBUF; Linux doubles the value and
    /// caps it at `net.core.wmem_max`). Returns the size now in effect, or nil when it could not be read.
    @discardableResult
    public func setSendBuffer(bytes: Int) -> Int? {
        guard !isClosed else { return nil }
        var value = Int32(clamping: bytes)
        _ = uv_send_buffer_size(handle.asHandle, &value)
        var now: Int32 = 0
        guard uv_send_buffer_size(handle.asHandle, &now) == 0 else { return nil }
        return Int(now)
    }

    /// After an end of stream: whether the peer closed altogether (nobody will read a reply) rather than only
    /// shutting down its sending side. A Unix socket reports POLLHUP only in the first case.
    public func peerHasClosed() -> Bool {
        var fd: uv_os_fd_t = -1
        guard !isClosed, uv_fileno(handle.asHandle, &fd) == 0 else { return true }
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLHUP | POLLERR) != 0
    }

    /// The uid of the process at the other end (SO_PEERCRED); nil when it cannot be read.
    public func peerUID() -> UInt32? {
        var fd: uv_os_fd_t = -1
        var uid: uid_t = 0
        guard uv_fileno(handle.asHandle, &fd) == 0, ferry_peer_uid(fd, &uid) == 0 else { return nil }
        return uid
    }

    /// Closes the connection; queued writes are cancelled (their callbacks still run, with an error), then the
    /// delegate is released.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        uv_close(handle.asHandle) { h in
            let me = Unmanaged<LoopPipe>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.delegate = nil
            me.handle.deallocate()
        }
    }
}
