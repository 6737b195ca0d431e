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
        var off = 0
        while off < bytes.count {
            let n = Platform.send(fd, bytes.baseAddress! + off, bytes.count - off)
            if n > 0 {
                off += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
}
