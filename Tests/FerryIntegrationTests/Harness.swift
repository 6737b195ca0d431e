import Foundation
import Testing
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Every integration suite nests in this one, which runs its tests one at a time: they block threads on process
/// and socket I/O, and on a 2-core machine the cooperative pool has only two threads for every test in the run.
@Suite(.serialized) enum IntegrationTests {}

/// Where `swift build` put the executables: next to the test bundle.
enum Binaries {
    static let directory: String = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        // …/debug/FerryPackageTests.xctest (a file on Linux) → …/debug
        while !FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("ferryd").path) && url.path != "/" {
            url.deleteLastPathComponent()
        }
        return url.path
    }()
    static var ferryd: String { directory + "/ferryd" }
    static var ferry: String { directory + "/ferry" }
}

/// A fresh temporary directory, removed by `remove()`. Short paths: socket addresses allow 107 bytes.
struct TempDir {
    let path: String
    init() {
        var template = Array("/tmp/ferry-it-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A `ferryd` started for one test on a temporary socket, stopped by PID.
final class Daemon: @unchecked Sendable {
    let dir: TempDir
    let socket: String
    private var process: Subprocess!
    let logPath: String
    private(set) var stopped = false

    /// Starts ferryd and waits until it accepts connections.
    init(_ extraArgs: [String] = [], socket: String? = nil, environment: [String: String] = [:], waitReady: Bool = true) throws {
        dir = TempDir()
        self.socket = socket ?? dir.path + "/s.sock"
        logPath = dir.path + "/ferryd.log"
        process = try Subprocess(Binaries.ferryd,
                                 ["--socket", self.socket, "--cache-dir", dir.path + "/cache", "--log-level", "debug"]
                                     // The machine's own configuration file is not the test's.
                                     + (extraArgs.contains("--config") ? [] : ["--no-config"]) + extraArgs,
                                 environment: environment, stderr: logPath)
        if waitReady { try waitUntilListening() }
    }

    var pid: pid_t { process.pid }

    func waitUntilListening(timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let fd = try? RawSocket.connectFD(socket) {
                close(fd)
                return
            }
            if !process.isRunning { throw HarnessError("ferryd exited early: \(log)") }
            usleep(10_000)
        }
        throw HarnessError("ferryd did not listen on \(socket) within \(timeout) s: \(log)")
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func signal(_ sig: Int32) { kill(pid, sig) }

    /// Waits for the process to exit; returns its exit status, or nil on timeout.
    func waitExit(timeout: Double = 15) -> Int32? { process.wait(timeout: timeout) }

    /// SIGTERM, then SIGKILL if it does not exit; removes the temporary directory.
    func stop() {
        guard !stopped else { return }
        stopped = true
        process.stop()
        dir.remove()
    }

    deinit { stop() }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A blocking socket that speaks raw bytes, for feeding the daemon what no real client would send.
final class RawSocket {
    let fd: Int32

    init(_ path: String, timeoutSeconds: Int = 10) throws {
        fd = try RawSocket.connectFD(path)
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    static func connectFD(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in for (k, b) in path.utf8.enumerated() { p[k] = b } }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 {
            let e = errno
            close(fd)
            throw HarnessError("connect \(path): \(String(cString: strerror(e)))")
        }
        return fd
    }

    func send(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + off, bytes.count - off, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw HarnessError("send failed: \(String(cString: strerror(errno)))") }
            off += n
        }
    }

    func send(_ json: JSONValue, body: [UInt8] = []) throws { try send(FrameEncoder.encode(json: json, body: body)) }

    func hello() throws {
        try send(["id": 1, "op": "hello", "args": ["versions": [1]]])
        guard case .result? = try readReply() else { throw HarnessError("hello failed") }
    }

    private func readExactly(_ n: Int) throws -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: n)
        var got = 0
        while got < n {
            let r = out.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, n - got, 0) }
            if r == 0 { return nil }
            if r < 0 {
                if errno == EINTR { continue }
                throw HarnessError("recv: \(String(cString: strerror(errno)))")
            }
            got += r
        }
        return out
    }

    /// The next frame's bytes as sent (header included), or nil at EOF.
    func readRawFrame() throws -> [UInt8]? {
        guard let header = try readExactly(8) else { return nil }
        let jl = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        let bl = Int(header[4]) << 24 | Int(header[5]) << 16 | Int(header[6]) << 8 | Int(header[7])
        guard let rest = try readExactly(jl + bl) else { throw HarnessError("EOF inside a frame") }
        return header + rest
    }

    /// The next frame, or nil at EOF.
    func readFrame() throws -> (JSONValue, [UInt8])? {
        guard let header = try readExactly(8) else { return nil }
        let jl = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        let bl = Int(header[4]) << 24 | Int(header[5]) << 16 | Int(header[6]) << 8 | Int(header[7])
        guard let rest = try readExactly(jl + bl) else { throw HarnessError("EOF inside a frame") }
        return (try JSONParser.parse(Array(rest[..<jl]), maxDepth: 64), Array(rest[jl...]))
    }

    /// The next reply whole: its final frame, with the bodies of the `chunk` events before it joined in front of
    /// its own (large replies come in pieces). Other events of the request are skipped.
    func readWholeReply() throws -> (JSONValue, [UInt8])? {
        var joined: [UInt8] = []
        while let (json, body) = try readFrame() {
            if json["final"] == true { return (json, joined + body) }
            if json["event"] == "chunk" { joined += body }
        }
        return nil
    }

    func readReply() throws -> ReplyEnvelope? {
        guard let (json, _) = try readFrame() else { return nil }
        guard let r = ReplyEnvelope.parse(json) else { throw HarnessError("not a reply: \(json)") }
        return r
    }

    /// True when the peer closed: the next read returns EOF.
    func isClosedByPeer() throws -> Bool { try readFrame() == nil }
}

/// The resident set size of a process in KiB (from /proc).
func rssKiB(_ pid: pid_t) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
    }
    return -1
}

/// A TCP port nothing listens on now on 127.0.0.1 (bound and released: a small race, on loopback only), for the
/// servers tests start on a port of their choosing (nginx, Prometheus, a password-protected Redis).
func freeTCPPort() throws -> Int {
    let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(s) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, len) == 0 && getsockname(s, $0, &len) == 0 }
    }
    guard bound else { throw HarnessError("no free port") }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// A Unix socket bound to `path` and listening (a stand-in for ferryd, or a path ferryd must not take).
func bindListener(_ path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { p in for (k, b) in path.utf8.enumerated() { p[k] = b } }
    let rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard rc == 0, listen(fd, 8) == 0 else { throw HarnessError("bind \(path)") }
    return fd
}
