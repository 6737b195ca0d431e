import Foundation
import Testing
import FerryProtocol

/// Large bodies go to the kernel from where they are (`Connection.writeFrameDirectly`) and only what the kernel
/// does not take is copied into the output: every byte must still arrive, in order, however the socket fills.
extension IntegrationTests {
@Suite struct DirectWriteTests {
    /// A reader with a small receive buffer that takes its replies a little at a time, with pauses, while large and
    /// small replies are pipelined behind each other: the socket is full at every size of write.
    @Test func largeRepliesToASlowSmallBufferedReaderArriveWholeAndInOrder() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let socket = try RawSocket(daemon.socket)
        try socket.hello()
        let sizes = [70_000, 5, 262_144, 65_536, 1_000_000, 3, 131_071, 4_000_000]
        let values = sizes.enumerated().map { k, n in (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ k &* 7 &+ $0 >> 9) } }
        for (k, value) in values.enumerated() {
            try socket.send(["id": .int(Int64(10 + k)), "op": "cache.set", "args": ["key": .string("v\(k)")]], body: value)
            guard case .result? = try socket.readReply() else { throw HarnessError("set \(k) failed") }
        }
        var size: Int32 = 4096
        setsockopt(socket.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        // Every get sent at once; the replies are read slowly.
        var requests: [UInt8] = []
        for k in values.indices {
            requests += FrameEncoder.encode(json: ["id": .int(Int64(100 + k)), "op": "cache.get", "args": ["key": .string("v\(k)")]])
        }
        try socket.send(requests)
        // Replies may interleave (a streamed one's chunks with another's frame): bodies are joined by id.
        var bodies: [Int64: [UInt8]] = [:], finals = 0
        while finals < values.count {
            usleep(2_000)
            guard let (json, body) = try socket.readFrame(), let id = json["id"]?.intValue else { throw HarnessError("no reply") }
            bodies[id, default: []] += body
            if json["final"] == true {
                #expect(json["result"] != nil, "\(json)")
                finals += 1
            }
        }
        for (k, value) in values.enumerated() {
            let body = bodies[Int64(100 + k)] ?? []
            #expect(body.count == value.count && body == value, "value \(k) of \(value.count) bytes arrives whole")
        }
    }
}
}
