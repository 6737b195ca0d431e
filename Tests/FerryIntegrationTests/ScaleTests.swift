import Foundation
import Testing
import FerryClient
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
@Suite struct ScaleTests {
    @Test func fiveHundredConnectionsAtOnce() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        var sockets: [RawSocket] = []
        for _ in 0..<520 { sockets.append(try RawSocket(daemon.socket)) }
        // Everyone speaks first, then everyone reads: the daemon holds all of them at the same time.
        for (k, s) in sockets.enumerated() {
            try s.send(FrameEncoder.encode(json: ["id": 1, "op": "hello", "args": ["versions": [1]]])
                       + FrameEncoder.encode(json: ["id": .int(Int64(k + 2)), "op": "ping"], body: Array("\(k)".utf8)))
        }
        for (k, s) in sockets.enumerated() {
            guard case .result(1, _)? = try s.readReply() else { Issue.record("hello \(k)"); return }
            guard let (reply, body) = try s.readFrame() else { Issue.record("ping \(k)"); return }
            #expect(reply["id"]?.intValue == Int64(k + 2))
            #expect(body == Array("\(k)".utf8))
        }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let stats = try await client.stats()
        #expect(stats["connections"]?["open"]?.intValue == 521)
    }

    /// A client that sends and never reads: the daemon stops reading from it once its unsent replies pass the
    /// high-water mark, so its memory stays bounded, and others are still served.
    @Test func backpressureBoundsAClientThatNeverReads() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let greedy = try RawSocket(daemon.socket)
        try greedy.hello()
        var small = 64 * 1024
        setsockopt(greedy.fd, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(greedy.fd, F_SETFL, fcntl(greedy.fd, F_GETFL) | O_NONBLOCK)
        let rssBefore = rssKiB(daemon.pid)
        let frame = FrameEncoder.encode(json: ["id": 1, "op": "ping"], body: [UInt8](repeating: 0xAB, count: 256 * 1024))
        var sentFrames = 0
        var partial = 0
        let deadline = Date().addingTimeInterval(1.5)
        // Each 256 KiB ping is echoed: 4,000 of them would be 1 GB of replies if the daemon kept reading.
        sending: while Date() < deadline && sentFrames < 4000 {
            while partial < frame.count {
                let n = frame.withUnsafeBytes { send(greedy.fd, $0.baseAddress! + partial, frame.count - partial, Int32(MSG_NOSIGNAL)) }
                if n < 0 {
                    if errno == EAGAIN { usleep(2000); continue sending }
                    Issue.record("send failed: \(errno)")
                    return
                }
                partial += n
            }
            partial = 0
            sentFrames += 1
        }
        #expect(sentFrames < 200, "the daemon stopped reading; \(sentFrames) frames went in")
        let rssAfter = rssKiB(daemon.pid)
        #expect(rssAfter - rssBefore < 64 * 1024, "daemon grew \(rssAfter - rssBefore) KiB")

        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        _ = try await client.ping()

        // Once the greedy client reads, everything it was owed arrives, in order.
        _ = fcntl(greedy.fd, F_SETFL, fcntl(greedy.fd, F_GETFL) & ~O_NONBLOCK)
        if partial > 0 {
            // Finish the half-sent frame from another thread: the daemon reads it only once we read.
            let fd = greedy.fd, rest = Array(frame[partial...])
            DispatchQueue.global().async {
                var off = 0
                while off < rest.count {
                    let n = rest.withUnsafeBytes { send(fd, $0.baseAddress! + off, rest.count - off, Int32(MSG_NOSIGNAL)) }
                    if n <= 0 { return }
                    off += n
                }
            }
            sentFrames += 1
        }
        for _ in 0..<sentFrames {
            guard let (json, body) = try greedy.readFrame() else { Issue.record("EOF"); return }
            #expect(json["result"]?["pong"] == true)
            #expect(body.count == 256 * 1024)
        }
    }
}
}
