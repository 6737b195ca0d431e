import Foundation
import Testing
import FerryClient
#if canImport(Glibc)
import Glibc
#endif

/// Nobody else reads the cache or redirects the daemon's files (issue 10, item 6): a real ferryd and the CLI.
extension IntegrationTests {
    @Suite struct FileSafetyTests {
        static func mode(_ path: String) -> mode_t? {
            var st = stat()
            return lstat(path, &st) == 0 ? st.st_mode & 0o777 : nil
        }

        @Test func aCacheDirectoryOthersCanReachIsRefused() throws {
            let cache = TempDir()
            defer { cache.remove() }
            chmod(cache.path, 0o755)
            let daemon = try Daemon(["--cache-dir", cache.path], waitReady: false)
            defer { daemon.stop() }
            #expect(daemon.waitExit() != 0)
            #expect(daemon.log.contains("has mode 755") && daemon.log.contains("chmod 700"), "\(daemon.log)")
            #expect(!FileManager.default.fileExists(atPath: cache.path + "/index.db"), "nothing was written into it")
        }

        @Test func everyFileTheDaemonMakesIsItsUsersAlone() async throws {
            let cache = TempDir()
            defer { cache.remove() }
            let daemon = try Daemon(["--cache-dir", cache.path + "/c"])
            let client = try await FerryClient.connect(path: daemon.socket)
            try await client.cacheSet("token", Array("secret".utf8))
            try await client.cacheSet("large", [UInt8](repeating: 7, count: 300_000))
            client.close()
            let dir = cache.path + "/c"
            #expect(Self.mode(dir) == 0o700)
            var checked = 0
            let walker = FileManager.default.enumerator(atPath: dir)
            while let name = walker?.nextObject() as? String {
                guard let mode = Self.mode(dir + "/" + name) else { continue }
                #expect(mode & 0o077 == 0, "\(name) has mode \(String(mode, radix: 8))")
                checked += 1
            }
            #expect(checked >= 4, "index, WAL, lock, journal and a blob at least (\(checked))")
            #expect(Self.mode(daemon.socket + ".lock").map { $0 & 0o077 } == 0)
            daemon.stop()
        }

        @Test func aPlantedSymlinkAsTheLockFileIsNotFollowed() throws {
            let dir = TempDir()
            defer { dir.remove() }
            let target = dir.path + "/precious"
            _ = FileManager.default.createFile(atPath: target, contents: Data("precious".utf8))
            let socket = dir.path + "/s.sock"
            symlink(target, socket + ".lock")
            let daemon = try Daemon([], socket: socket, waitReady: false)
            defer { daemon.stop() }
            #expect(daemon.waitExit() != 0)
            #expect(daemon.log.contains("symbolic link"), "\(daemon.log)")
            #expect(try String(contentsOfFile: target, encoding: .utf8) == "precious", "neither truncated nor written")
        }

        @Test func theCLIDoesNotWriteTheDaemonsLogThroughASymlink() throws {
            let dir = TempDir()
            defer { dir.remove() }
            let target = dir.path + "/precious"
            _ = FileManager.default.createFile(atPath: target, contents: Data("precious".utf8))
            symlink(target, dir.path + "/ferryd.log")
            let r = try runCommand(Binaries.ferry, ["ping"], environment: ["FERRY_SOCKET": dir.path + "/s.sock"])
            #expect(r.status == 3 && r.err.contains("symbolic link"), "\(r)")
            #expect(try String(contentsOfFile: target, encoding: .utf8) == "precious")
        }
    }
}
