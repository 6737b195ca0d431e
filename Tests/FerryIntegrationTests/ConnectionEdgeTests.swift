import Foundation
import Testing
import FerryClient
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Half-closed clients, junk arguments and pathological frames (issue 10, item 7), against a real ferryd.
extension IntegrationTests {
    @Suite struct ConnectionEdgeTests {
        @Test func aClientThatShutsItsSideGetsEveryReplyItIsOwed() throws {
            let daemon = try Daemon()
            defer { daemon.stop() }
            for cutMidFrame in [false, true] {
                let raw = try RawSocket(daemon.socket)
                try raw.hello()
                var frames: [UInt8] = []
                for n in 0..<40 {
                    let id = Int64(10 + n)
                    let json: JSONValue = n % 4 == 0
                        ? ["id": .int(id), "op": "ping", "args": ["delay_ms": 80]]      // still running at the end of stream
                        : ["id": .int(id), "op": "cache.set", "args": ["key": .string("k\(n)")]]
                    frames += FrameEncoder.encode(json: json, body: Array("value \(n)".utf8))
                }
                if cutMidFrame { frames += FrameEncoder.encode(json: ["id": 99, "op": "ping"]).prefix(9) }
                try raw.send(frames)
                shutdown(raw.fd, Int32(SHUT_WR))
                var answered = Set<UInt64>()
                while let reply = try raw.readReply() {
                    guard case .result(let id, _) = reply else { Issue.record("unexpected \(reply)"); continue }
                    answered.insert(id)
                }
                #expect(answered == Set((10..<50).map(UInt64.init)), "cut mid-frame: \(cutMidFrame), got \(answered.count) of 40")
            }
            try RawSocket(daemon.socket).hello()  // and the daemon goes on serving
        }

        /// Under a low open-file limit the daemon serves what it can and answers every connection past that with
        /// `resource_exhausted` (none closed silently), keeping descriptors for blobs.
        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")))
        func aLowFileLimitLowersTheConnectionCapAndNobodyIsDroppedSilently() async throws {
            let dir = TempDir()
            defer { dir.remove() }
            let socket = dir.path + "/s.sock"
            let process = try Subprocess("/usr/bin/prlimit", ["--nofile=256:256", Binaries.ferryd, "--socket", socket,
                                                               "--cache-dir", dir.path + "/cache"], stderr: dir.path + "/log")
            defer { process.stop() }
            for _ in 0..<500 where (try? RawSocket.connectFD(socket)).map({ close($0); return true }) != true { usleep(10_000) }
            let log = { (try? String(contentsOfFile: dir.path + "/log", encoding: .utf8)) ?? "" }
            var served: [RawSocket] = []
            var refused = 0
            for _ in 0..<300 {
                let raw = try RawSocket(socket)
                // A refused connection is answered and closed at once: the hello may meet a closed socket.
                try? raw.send(["id": 1, "op": "hello", "args": ["versions": [1]]])
                switch try raw.readReply() {
                case .result?: served.append(raw)
                case .error(_, let e)? where e.code == .resourceExhausted: refused += 1
                case let other: Issue.record("a connection got \(String(describing: other))")
                }
            }
            // Kept back: 96, and a socket and a spool file for each of the 64 transfers.
            #expect(served.count == 256 - 96 - 2 * 64 && refused == 300 - served.count, "served \(served.count), refused \(refused)")
            #expect(log().contains("serving at most 32 connections"), "\(log())")
            served.removeLast(10)  // room for one more client
            var client: FerryClient?
            for _ in 0..<200 where client == nil {
                client = try? await FerryClient.connect(path: socket)
                if client == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            let c = try #require(client)
            defer { c.close() }
            try await c.cacheSet("blob", [UInt8](repeating: 3, count: 300_000))
            #expect(try await c.cacheGet("blob")?.bytes.count == 300_000, "a blob still finds a descriptor")
        }

        @Test func imageEvictRefusesWhatIsNotAURL() async throws {
            let daemon = try Daemon()
            defer { daemon.stop() }
            let client = try await FerryClient.connect(path: daemon.socket)
            defer { client.close() }
            for url in ["", "file:///etc/passwd", "not a url"] {
                do {
                    _ = try await client.call(.imageEvict, ["url": .string(url)])
                    Issue.record("\(url) was accepted")
                } catch let e as FerryError {
                    #expect(e.code == .invalidArgument, "\(url): \(e)")
                }
            }
            #expect(try await client.call(.imageEvict, ["url": "https://img.test/a.png"]).result["evicted"] == .bool(false))
        }

        @Test func aHugeOperationNameIsUnknownAndItsEchoStaysShort() throws {
            let daemon = try Daemon()
            defer { daemon.stop() }
            let raw = try RawSocket(daemon.socket)
            try raw.hello()
            // One grapheme cluster of 800 KB: "a" and 400,000 combining acute accents.
            let op = "a" + String(repeating: "\u{301}", count: 400_000)
            try raw.send(["id": 2, "op": .string(op)])
            guard case .error(2, let error)? = try raw.readReply() else { Issue.record("an error for id 2"); return }
            #expect(error.code == .unimplemented && error.message.utf8.count < 300, "\(error.message.utf8.count) bytes")
            try raw.send(["id": 3, "op": "ping"])
            guard case .result(3, _)? = try raw.readReply() else { Issue.record("the connection still serves"); return }
        }
    }
}
