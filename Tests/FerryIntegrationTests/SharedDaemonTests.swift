import Foundation
import Testing
import FerryClient

/// One daemon for a team's CI box: with `--socket-group` the socket is 0660 and the group's, and a member running
/// as another uid is served (and counted under its uid in `stats`), while a non-member cannot connect; with
/// `--allow-other-users` it is 0666; without either, another uid cannot connect at all. Clients run as `nobody`
/// through `setpriv` (the tests run as root).
extension IntegrationTests {
@Suite(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
struct SharedDaemonTests {
    /// `ferry ping` as uid and gid 65534 (nobody, nogroup), with `groups` as its supplementary groups.
    static func pingAsNobody(_ socket: String, groups: String) throws -> (status: Int32, out: String, err: String) {
        try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--groups=\(groups)", Binaries.ferry, "ping", "-c", "1", "--socket", socket],
                       environment: ["FERRY_NO_AUTOSTART": "1", "HOME": "/tmp"])
    }

    /// A directory every user may pass through (the tests' own temporary directories are 0700).
    static func sharedDirectory() throws -> String {
        let dir = "/tmp/ferry-shared-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(dir, 0o755) == 0, chmod(dir, 0o755) == 0 else { throw HarnessError("mkdir \(dir)") }
        return dir
    }

    @Test func aSocketGroupServesItsMembersOnly() async throws {
        let dir = try Self.sharedDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/run/ferryd.sock"
        let daemon = try Daemon(["--socket-group", "nogroup"], socket: socket)
        defer { daemon.stop() }
        var st = stat()
        #expect(stat(socket, &st) == 0 && st.st_mode & 0o777 == 0o660 && st.st_gid == 65534, "0660 and the group's")
        #expect(stat(dir + "/run", &st) == 0 && st.st_mode & 0o777 == 0o750 && st.st_gid == 65534)
        let member = try Self.pingAsNobody(socket, groups: "65534")
        #expect(member.status == 0 && member.out.contains("pong"), "\(member)")
        let stranger = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=1", "--clear-groups", Binaries.ferry, "ping", "-c", "1", "--socket", socket],
                                      environment: ["FERRY_NO_AUTOSTART": "1", "HOME": "/tmp"])
        #expect(stranger.status == 3, "not in the group: the file system refuses it: \(stranger)")
        let client = try await FerryClient.connect(path: socket)
        defer { client.close() }
        let uids = try await client.stats()["uids"]
        #expect((uids?["65534"]?["requests"]?.intValue ?? 0) >= 2, "hello and ping, counted under the member's uid: \(String(describing: uids))")
        #expect(uids?["0"]?["connections_open"]?.intValue == 1)
    }

    @Test func otherUsersOnlyWhenAllowed() throws {
        let dir = try Self.sharedDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let alone = try Daemon([], socket: dir + "/alone.sock")
        defer { alone.stop() }
        #expect(try Self.pingAsNobody(dir + "/alone.sock", groups: "65534").status == 3, "0600: another uid cannot connect")
        let open = try Daemon(["--allow-other-users"], socket: dir + "/open.sock")
        defer { open.stop() }
        var st = stat()
        #expect(stat(dir + "/open.sock", &st) == 0 && st.st_mode & 0o777 == 0o666)
        #expect(try Self.pingAsNobody(dir + "/open.sock", groups: "65534").status == 0, "--allow-other-users really lets them in")
    }
}
}
