#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FerryProtocol

/// Blocking Unix-socket calls with errors as `FerryError`; also used by the benchmark's raw clients.
public enum SocketIO {
    /// A connected stream socket to `path` (close-on-exec); `unavailable` when nothing answers.
    public static func connect(path: String) throws(FerryError) -> Int32 {
        if let problem = SocketPath.problem(with: path) { throw FerryError(.invalidArgument, problem) }
        let fd = Platform.streamSocket()
        guard fd >= 0 else { throw FerryError.connection("socket(): \(String(cString: strerror(errno)))") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (k, b) in path.utf8.enumerated() { p[k] = b }
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Platform.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if rc != 0 {
            let e = errno
            Platform.close(fd)
            throw FerryError.connection("no ferryd answers on \(path): \(String(cString: strerror(e)))")
        }
        return fd
    }

    /// Writes all of `bytes`, retrying on EINTR; false when the peer is gone.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        write(fd, bytes, waiting: true) == bytes.count
    }

    /// Writes what the socket takes now without waiting; the bytes written, or -1 when the socket is gone.
    static func writeAvailable(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        write(fd, bytes, waiting: false)
    }

    private static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, waiting: Bool) -> Int {
        var off = 0
        while off < bytes.count {
            let rest = bytes.count - off
            let n = waiting ? Platform.send(fd, bytes.baseAddress! + off, rest) : Platform.sendNow(fd, bytes.baseAddress! + off, rest)
            if n > 0 {
                off += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && !waiting && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                return -1
            }
        }
        return off
    }
}
