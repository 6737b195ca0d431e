import FerryClient
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `FerryClient.connect(autostart:)` / `FerryDaemon`: a library user gets the CLI's auto-start.
extension IntegrationTests {
@Suite struct AutostartLibraryTests {
    @Test func aLibraryClientStartsTheDaemonWhenNoneAnswers() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let socket = dir.path + "/s"
        // Nothing there: without auto-start, unavailable at once.
        await #expect(throws: FerryError.self) { _ = try await FerryClient.connect(path: socket, autostart: false) }
        var daemon = FerryDaemon(socket: socket, clientName: "autostart-test")
        daemon.daemonArguments = ["--cache-dir", dir.path + "/cache"]
        let client = try await daemon.connect()
        let pid = try await client.stats()["pid"]?.intValue
        defer { if let pid { kill(pid_t(pid), SIGTERM) } }
        #expect(try await client.ping() > .zero && pid != nil)
        client.close()
        // Running now: the next connection finds it without starting another.
        let again = try await FerryClient.connect(path: socket, autostart: true)
        #expect(try await again.stats()["pid"]?.intValue == pid)
        again.close()
        if let pid {
            kill(pid_t(pid), SIGTERM)
            // Our child (spawned by this process): reaped here, so that it leaves no zombie.
            var status: Int32 = 0
            var reaped = false
            for _ in 0..<1000 where !reaped {
                reaped = waitpid(pid_t(pid), &status, WNOHANG) == pid_t(pid)
                if !reaped { usleep(10_000) }
            }
            #expect(reaped, "stopped by PID")
        }
    }
}
}
