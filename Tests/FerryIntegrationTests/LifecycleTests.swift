import Foundation
import Testing
import FerryClient
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
@Suite struct LifecycleTests {
    func mode(_ path: String) -> mode_t {
        var st = stat()
        lstat(path, &st)
        return st.st_mode
    }

    @Test func defaultSocketDirectoryAndModes() async throws {
        let runtime = TempDir()
        defer { runtime.remove() }
        // No --socket: the default path under XDG_RUNTIME_DIR, whose directory the daemon creates.
        let p = try Subprocess(Binaries.ferryd, ["--cache-dir", runtime.path + "/cache"], environment: ["XDG_RUNTIME_DIR": runtime.path])
        defer { p.stop() }
        let socket = runtime.path + "/ferry/ferryd.sock"
        for _ in 0..<500 where (try? RawSocket.connectFD(socket)).map({ close($0) }) == nil { usleep(10_000) }
        #expect(mode(runtime.path + "/ferry") & 0o777 == 0o700)
        #expect(mode(socket) & S_IFMT == S_IFSOCK)
        #expect(mode(socket) & 0o777 == 0o600)
        let client = try await FerryClient.connect(path: socket)
        _ = try await client.ping()
        client.close()
    }

    @Test func refusesAnUnsafeDefaultDirectory() throws {
        let runtime = TempDir()
        defer { runtime.remove() }
        mkdir(runtime.path + "/ferry", 0o755)
        chmod(runtime.path + "/ferry", 0o755)
        let r = try runCommand(Binaries.ferryd, ["--cache-dir", runtime.path + "/c"], environment: ["XDG_RUNTIME_DIR": runtime.path])
        #expect(r.status == 1)
        #expect(r.err.contains("must be 0700"), "\(r.err)")
    }

    @Test func refusesAPathTooLongForSunPath() throws {
        let long = "/tmp/" + String(repeating: "x", count: 120) + ".sock"
        let r = try runCommand(Binaries.ferryd, ["--socket", long])
        #expect(r.status == 1)
        #expect(r.err.contains("at most 107"), "\(r.err)")
    }

    @Test func secondDaemonOnTheSamePathRefuses() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let r = try runCommand(Binaries.ferryd, ["--socket", daemon.socket])
        #expect(r.status == 3, "3: another daemon has the socket")
        #expect(r.err.contains("already running"), "\(r.err)")
        #expect(r.err.contains("pid \(daemon.pid)"), "\(r.err)")
        let raw = try RawSocket(daemon.socket)
        try raw.hello()
    }

    @Test func staleSocketIsReplacedButALiveOneIsNot() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path + "/s.sock"
        // A listener that is not ferryd: the daemon must not remove its socket.
        let live = try bindListener(path)
        let refused = try runCommand(Binaries.ferryd, ["--socket", path])
        #expect(refused.status == 3)
        #expect(refused.err.contains("refusing to remove"), "\(refused.err)")
        // The same file after its server died is stale: removed, and the daemon starts.
        close(live)
        #expect(mode(path) & S_IFMT == S_IFSOCK, "the stale socket file is still there")
        let daemon = try Daemon(socket: path)
        defer { daemon.stop() }
        #expect(daemon.log.contains("removed stale socket"))
        // A regular file in the way is never removed.
        let other = dir.path + "/file.sock"
        _ = FileManager.default.createFile(atPath: other, contents: Data("keep".utf8))
        let r = try runCommand(Binaries.ferryd, ["--socket", other])
        #expect(r.status == 1 && r.err.contains("not a socket"))
        #expect(FileManager.default.contents(atPath: other) == Data("keep".utf8))
    }

    @Test func sigtermDrainsRequestsInFlightThenExitsZero() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawSocket(daemon.socket)
        try raw.hello()
        try raw.send(["id": 2, "op": "ping", "args": ["delay_ms": 600]])
        usleep(100_000)
        daemon.signal(SIGTERM)
        usleep(100_000)
        try raw.send(["id": 3, "op": "ping"])
        guard case .error(3, let e)? = try raw.readReply() else {
            Issue.record("a new request while draining must be refused")
            return
        }
        #expect(e.code == .unavailable)
        #expect(throws: HarnessError.self, "no new connections while draining") { try RawSocket(daemon.socket) }
        #expect(try raw.readReply() == .result(id: 2, ["pong": true]), "the request in flight finished")
        #expect(daemon.waitExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket file is removed")
    }

    /// A reply too large for the socket buffer, finished during the drain, still arrives whole.
    @Test func drainDeliversLargeRepliesWhole() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawSocket(daemon.socket)
        try raw.hello()
        let body = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try raw.send(["id": 2, "op": "ping", "args": ["delay_ms": 200]], body: body)
        usleep(50_000)
        daemon.signal(SIGTERM)
        usleep(600_000)  // the reply is written (and queued) long before we read
        guard let (json, echoed) = try raw.readWholeReply() else {
            Issue.record("EOF before the reply")
            return
        }
        #expect(json["result"]?["pong"] == true)
        #expect(echoed.count == body.count && echoed == body)
        #expect(daemon.waitExit() == 0)
    }

    /// A client that shuts down its sending side and then reads gets every reply already produced.
    @Test func halfCloseStillReceivesReplies() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawSocket(daemon.socket)
        try raw.hello()
        let body = [UInt8](repeating: 0x5A, count: 2 << 20)
        try raw.send(["id": 2, "op": "ping"], body: body)
        shutdown(raw.fd, Int32(SHUT_WR))
        usleep(200_000)
        guard let (json, echoed) = try raw.readWholeReply() else {
            Issue.record("EOF before the reply")
            return
        }
        #expect(json["id"] == 2)
        #expect(echoed.count == body.count && echoed == body)
        #expect(try raw.isClosedByPeer())
    }

    @Test func graceperiodEndsLongRequests() async throws {
        let daemon = try Daemon(["--grace", "300ms"])
        defer { daemon.stop() }
        let raw = try RawSocket(daemon.socket)
        try raw.hello()
        try raw.send(["id": 2, "op": "ping", "args": ["delay_ms": 20_000]])
        usleep(50_000)
        let started = Date()
        daemon.signal(SIGINT)
        guard case .error(2, let e)? = try raw.readReply() else {
            Issue.record("the request must be ended when the grace period is over")
            return
        }
        #expect(e.code == .unavailable)
        #expect(daemon.waitExit() == 0)
        #expect(Date().timeIntervalSince(started) < 10)
    }

    /// SO_PEERCRED: a peer with another uid is refused unless --allow-other-users. Needs root, to act as nobody.
    @Test(.enabled(if: getuid() == 0, "needs root to connect as another user"))
    func peersWithAnotherUidAreRefused() throws {
        for allow in [false, true] {
            let shared = TempDir()
            defer { shared.remove() }
            chmod(shared.path, 0o755)
            let daemon = try Daemon(allow ? ["--allow-other-users"] : [], socket: shared.path + "/s.sock")
            defer { daemon.stop() }
            chmod(daemon.socket, 0o666)
            let script = """
                import os, socket, struct, json
                os.setgid(65534); os.setuid(65534)
                s = socket.socket(socket.AF_UNIX); s.connect("\(daemon.socket)")
                j = json.dumps({"id": 1, "op": "hello", "args": {"versions": [1]}}).encode()
                try:
                    s.sendall(struct.pack(">II", len(j), 0) + j)
                except OSError:
                    pass  # a refused peer may already be disconnected; its error frame is still readable
                h = s.recv(8); jl, bl = struct.unpack(">II", h); print(s.recv(jl).decode())
                """
            let r = try runCommand("/usr/bin/env", ["python3", "-c", script])
            #expect(r.status == 0, "\(r.err)")
            if allow {
                #expect(r.out.contains("\"result\""), "\(r.out)")
            } else {
                #expect(r.out.contains("permission_denied"), "\(r.out)")
            }
        }
    }
}
}
