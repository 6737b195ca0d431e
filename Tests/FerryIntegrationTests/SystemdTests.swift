import Foundation
import Testing
import FerryClient

/// The systemd protocols with systemd's own tools: `systemd-socket-activate` binds the socket and starts ferryd on
/// the first connection, handing the socket over (LISTEN_FDS); a `NOTIFY_SOCKET` this test listens on hears READY=1
/// once ferryd listens, RELOADING=1 then READY=1 around a SIGHUP, STOPPING=1 when it drains.
extension IntegrationTests {
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate")))
struct SystemdTests {
    @Test func socketActivationServesTheSocketSystemdBound() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let socket = dir.path + "/activated.sock"
        let activator = try Subprocess("/usr/bin/systemd-socket-activate",
                                       ["-l", socket, Binaries.ferryd, "--no-config", "--cache-dir", dir.path + "/cache"],
                                       environment: [:], stderr: dir.path + "/log")
        defer { activator.stop() }
        try waitForPath(socket)
        #expect(!FileManager.default.fileExists(atPath: socket + ".lock"), "no ferryd yet: systemd's tool holds the socket")
        // The first connection starts ferryd, which serves the very socket it was handed.
        let client = try await FerryClient.connect(path: socket)
        try await client.cacheSet("k", Array("v".utf8))
        #expect(try await client.cacheGet("k")?.bytes == Array("v".utf8))
        let stats = try await client.stats()
        client.close()
        let log = try String(contentsOfFile: dir.path + "/log", encoding: .utf8)
        #expect(log.contains("socket passed by systemd"), "\(log)")
        #expect(!FileManager.default.fileExists(atPath: socket + ".lock"), "no lock beside a socket systemd owns")
        let pid = pid_t(stats["pid"]?.intValue ?? 0)
        #expect(pid == activator.pid, "ferryd replaced the tool in the same process (exec)")
        activator.stop()
        #expect(FileManager.default.fileExists(atPath: socket), "the socket is systemd's: left in place when ferryd stops")
    }

    @Test func notifyTellsReadyReloadingAndStopping() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let notify = try DatagramListener(path: dir.path + "/notify")
        let daemon = try Daemon([], environment: ["NOTIFY_SOCKET": notify.path])
        defer { daemon.stop() }
        let ready = try notify.receive()
        #expect(ready.contains("READY=1") && ready.contains("MAINPID=\(daemon.pid)") && ready.contains("STATUS=listening on \(daemon.socket)"), "\(ready)")
        daemon.signal(SIGHUP)
        let reloading = try notify.receive(), readyAgain = try notify.receive()
        #expect(reloading.contains("RELOADING=1") && reloading.contains("MONOTONIC_USEC="), "\(reloading)")
        #expect(readyAgain.contains("READY=1"))
        daemon.signal(SIGTERM)
        #expect(try notify.receive().contains("STOPPING=1"))
        #expect(daemon.waitExit() == 0)
    }
}
}

func waitForPath(_ path: String) throws {
    for _ in 0..<500 {
        if FileManager.default.fileExists(atPath: path) { return }
        usleep(10_000)
    }
    throw HarnessError("\(path) did not appear")
}

/// A Unix datagram socket standing in for systemd's notification socket.
final class DatagramListener {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in for (k, b) in path.utf8.enumerated() { p[k] = b } }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else { throw HarnessError("bind \(path): \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next datagram (waiting up to 10 s).
    func receive() throws -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        guard n > 0 else { throw HarnessError("no notification within 10 s") }
        return String(decoding: buffer[..<n], as: UTF8.self)
    }

    deinit { close(fd) }
}
