import Foundation
import Testing
import FerryProtocol

/// Requests read in one poll phase are answered together at its end, the first frame of each connection with the
/// scan and digest made as it was read (`ReadBatch`): the replies, their order and what is stored must be exactly
/// what they were when each read was answered at once.
extension IntegrationTests {
@Suite struct ReadBatchTests {
    static func frame(_ json: String, body: [UInt8] = []) -> [UInt8] { HotPathTests.frame(json, body: body) }

    static func result(_ s: RawSocket) throws -> (id: Int?, result: JSONValue?, error: String?, body: [UInt8]) {
        let (reply, body) = try #require(try s.readFrame())
        return (reply["id"]?.intValue.map { Int($0) }, reply["result"], reply["error"]?["code"]?.stringValue, body)
    }

    /// One write of many requests: the first is read ahead, the rest are not; each is answered once, seeing what
    /// the ones before it did (a get after a set of its key, in the default namespace named or not).
    @Test func requestsWrittenTogetherSeeTheOnesBefore() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let s = try RawSocket(daemon.socket)
        try s.hello()
        let requests: [[UInt8]] = [
            Self.frame(#"{"id":2,"op":"cache.get","args":{"key":"batch:k"}}"#),
            Self.frame(#"{"id":3,"op":"cache.set","args":{"key":"batch:k"}}"#, body: Array("one".utf8)),
            Self.frame(#"{"id":4,"op":"cache.get","args":{"namespace":"default","key":"batch:k"}}"#),
            Self.frame(#"{"id":5,"op":"cache.set","args":{"namespace":"app","key":"batch:k"}}"#, body: Array("two".utf8)),
            Self.frame(#"{"id":6,"op":"cache.get","args":{"key":"batch:k"}}"#),
            Self.frame(#"{"id":7,"op":"ping"}"#, body: [9]),
            Self.frame(#"{"id":8,"op":"cache.delete","args":{"key":"batch:k"}}"#),
            Self.frame(#"{"id":9,"op":"cache.get","args":{"key":"batch:k"}}"#),
            Self.frame(#"{"id":10,"op":"cache.get","args":{"namespace":"app","key":"batch:k"}}"#),
        ]
        try s.send(requests.flatMap { $0 })
        // Replies come as each request finishes (a set after its journal write, a miss from the disk), by id.
        var replies: [Int: (result: JSONValue?, error: String?, body: [UInt8])] = [:]
        for _ in 2...10 {
            let r = try Self.result(s)
            let id = try #require(r.id)
            #expect(replies[id] == nil, "one reply for \(id)")
            replies[id] = (r.result, r.error, r.body)
        }
        #expect(replies.keys.sorted() == Array(2...10))
        #expect(replies[2]?.error == "not_found", "the get before the set")
        #expect(replies[4]?.body == Array("one".utf8) && replies[6]?.body == Array("one".utf8), "the gets after it")
        #expect(replies[7]?.body == [9])
        #expect(replies[8]?.result?["deleted"]?.boolValue == true)
        #expect(replies[9]?.error == "not_found", "the get after the delete")
        #expect(replies[10]?.body == Array("two".utf8), "the other namespace's value stays")
    }

    /// Many connections write before any reads: several are read in one poll phase and answered together, each
    /// its own key's value (a digest or scan handed to the wrong connection would answer with another's).
    @Test func connectionsReadTogetherGetTheirOwnValues() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let writer = try RawSocket(daemon.socket)
        try writer.hello()
        for i in 0..<40 {
            try writer.send(Self.frame(#"{"id":\#(i + 2),"op":"cache.set","args":{"key":"conn:\#(i)"}}"#, body: Array("value \(i)".utf8)))
            #expect(try Self.result(writer).error == nil)
        }
        let sockets = try (0..<40).map { _ in try RawSocket(daemon.socket) }
        for s in sockets { try s.hello() }
        for round in 0..<5 {
            // Each sends a get and, in the same write, a frame cut in half: read ahead is only a whole frame.
            for (i, s) in sockets.enumerated() {
                let second = Self.frame(#"{"id":\#(round * 2 + 3),"op":"cache.get","args":{"key":"conn:\#((i + 1) % 40)"}}"#)
                try s.send(Self.frame(#"{"id":\#(round * 2 + 2),"op":"cache.get","args":{"key":"conn:\#(i)"}}"#) + second[..<10])
            }
            for (i, s) in sockets.enumerated() {
                let first = try Self.result(s)
                #expect(first.id == round * 2 + 2 && first.body == Array("value \(i)".utf8), "connection \(i), round \(round)")
            }
            for (i, s) in sockets.enumerated() {
                let second = Self.frame(#"{"id":\#(round * 2 + 3),"op":"cache.get","args":{"key":"conn:\#((i + 1) % 40)"}}"#)
                try s.send(Array(second[10...]))
            }
            for (i, s) in sockets.enumerated() {
                let second = try Self.result(s)
                #expect(second.id == round * 2 + 3 && second.body == Array("value \((i + 1) % 40)".utf8), "connection \(i), round \(round)")
            }
        }
    }

    /// Frames scanned ahead while the one before them is handled (`lookAhead`) around an upload: the part frames
    /// that follow the request that opens it, and a get between them, are read as an open upload makes them read,
    /// not as they were scanned before it opened.
    @Test func framesScannedAheadOfAnUploadAreReadAsItMakesThem() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let s = try RawSocket(daemon.socket)
        try s.hello()
        try s.send(Self.frame(#"{"id":2,"op":"cache.set","args":{"key":"ahead:k"}}"#, body: [1, 2]))
        #expect(try Self.result(s).error == nil)
        let (a, b, c) = (Array(repeating: UInt8(7), count: 1000), Array(repeating: UInt8(8), count: 1000), [UInt8(9)])
        try s.send(Self.frame(#"{"id":3,"op":"cache.get","args":{"key":"ahead:k"}}"#)
            + Self.frame(#"{"id":4,"op":"cache.set","args":{"key":"ahead:up"},"more":true}"#, body: a)
            + Self.frame(#"{"id":4,"more":true}"#, body: b)
            + Self.frame(#"{"id":5,"op":"cache.get","args":{"key":"ahead:k"}}"#)
            + Self.frame(#"{"id":4,"more":false}"#, body: c)
            + Self.frame(#"{"id":6,"op":"ping"}"#, body: [6]))
        var replies: [Int: (result: JSONValue?, error: String?, body: [UInt8])] = [:]
        for _ in 0..<4 {
            let r = try Self.result(s)
            replies[try #require(r.id)] = (r.result, r.error, r.body)
        }
        #expect(replies[3]?.body == [1, 2] && replies[5]?.body == [1, 2], "the gets before and inside the upload")
        #expect(replies[4]?.result?["stored"]?.boolValue == true, "the upload, whole: \(String(describing: replies[4]))")
        #expect(replies[6]?.body == [6])
        try s.send(Self.frame(#"{"id":7,"op":"cache.get","args":{"key":"ahead:up"}}"#))
        #expect(try Self.result(s).body == a + b + c)
    }

    /// A set written with the end of the client's sending side right behind it is answered and stored: what was
    /// read before an end of stream is handled before it.
    @Test func aSetFollowedByTheEndIsAnsweredAndStored() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        for i in 0..<20 {
            let s = try RawSocket(daemon.socket)
            try s.hello()
            try s.send(Self.frame(#"{"id":2,"op":"cache.set","args":{"key":"end:\#(i)"}}"#, body: [UInt8(i)]))
            shutdown(s.fd, Int32(SHUT_WR))
            #expect(try Self.result(s).result?["stored"]?.boolValue == true, "set \(i)")
            #expect(try s.isClosedByPeer())
        }
        let check = try RawSocket(daemon.socket)
        try check.hello()
        for i in 0..<20 {
            try check.send(Self.frame(#"{"id":\#(i + 2),"op":"cache.get","args":{"key":"end:\#(i)"}}"#))
            #expect(try Self.result(check).body == [UInt8(i)])
        }
    }
}
}
