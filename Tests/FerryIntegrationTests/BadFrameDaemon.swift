import Foundation
import FerryProtocol

/// A stand-in for ferryd that answers `hello`, then every batch of pings it reads with one write, until it has
/// answered `badAfter` of them: then it sends a bad frame (a header naming an empty envelope) and answers no more,
/// keeping the socket open. A pipeline of calls is flowing when the bad frame comes, so it is most likely read by a
/// call in the reader thread's place.
final class BadFrameDaemon: @unchecked Sendable {
    let path: String
    private let listener: Int32

    init(path: String, badAfter: Int) throws {
        self.path = path
        let fd = try bindListener(path)
        listener = fd
        Thread { BadFrameDaemon.serve(fd, badAfter: badAfter) }.start()
    }

    /// Closing the listener ends `accept`; the served connection ends when the client closes its side.
    func stop() { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }

    private static func serve(_ listener: Int32, badAfter: Int) {
        let fd = accept(listener, nil, nil)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let decoder = FrameDecoder(maxFrameBytes: 1 << 20, maxJSONBytes: 1 << 16)
        var answered = 0, broken = false
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return }
            decoder.append(Array(chunk[..<n]))
            var out: [UInt8] = []
            while let frame = try? decoder.next() {
                guard !broken, case .object(let o)? = try? JSONParser.parse(frame.json), let id = o["id"]?.intValue else { continue }
                if o["op"]?.stringValue == "hello" {
                    out += FrameEncoder.encode(json: ["id": .int(id), "final": true, "result": ["version": 1, "server": "bad-frame"]])
                } else if answered < badAfter {
                    out += FrameEncoder.encode(json: ["id": .int(id), "final": true, "result": ["pong": true]])
                    answered += 1
                } else {
                    out += [UInt8](repeating: 0, count: ProtocolLimits.headerBytes)
                    broken = true
                }
            }
            if !out.isEmpty { _ = out.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        }
    }
}
