#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import FerryBytes
@testable import FerryFetch

/// Bodies as they arrive: the spool (memory, then a file; readers at their own pace; woken when enough is new;
/// handed to the store without a copy), and the engine serving a response at its head, with coalesced waiters
/// and late joiners following the one download.
@Suite struct BodySpoolTests {
    static func directory() -> String {
        let dir = NSTemporaryDirectory() + "ferry-spool-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(dir, 0o700)
        return dir
    }

    static func pattern(_ n: Int, from start: Int = 0) -> [UInt8] { (start..<start + n).map { UInt8($0 % 251) } }

    static func readAll(_ spool: BodySpool, max: Int = 100_000) -> [UInt8] {
        var out: [UInt8] = []
        while case .bytes(let b) = spool.read(at: out.count, max: max) { out += b }
        return out
    }

    /// A body nothing keeps and one reader follows (`streamThrough`) never touches the disk while the reader keeps up:
    /// what it has read is let go; a reader `windowBytes` behind makes the feeder wait (`isWindowFull`) until it
    /// has read half; a feeder that does not wait sends the unread bytes to a file past twice that, and the reader
    /// goes on from there (the bytes before are gone: a read there fails clearly; the file is nobody's to keep).
    @Test func aBodyStreamedToOneReaderSkipsTheFileUnlessTheReaderFallsBehind() throws {
        let dir = BodySpoolTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var config = BodySpool.Config(directory: dir)
        config.memoryBytes = 1000
        config.windowBytes = 5000
        let kept = BodySpool(config: config)
        kept.streamThrough()
        var read: [UInt8] = []
        for i in 0..<100 {
            #expect(kept.append(BodySpoolTests.pattern(300, from: i * 300)) == nil)
            while case .bytes(let b) = kept.read(at: read.count, max: 1000) { read += b }
        }
        kept.finish(.success(()))
        #expect(kept.read(at: read.count, max: 1000) == .end)
        #expect(read == BodySpoolTests.pattern(30_000))
        #expect(!kept.isSpilled && kept.isStreamingThrough && kept.memoryBytes <= 2000, "read pieces let go")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == [])
        #expect(kept.completeInMemory == nil && kept.takeFile() == nil, "no whole body to hand to anyone")

        // A reader a window behind: the feeder is told to wait, and told once the reader has read half of it.
        let waits = BodySpool(config: config)
        waits.streamThrough()
        #expect(waits.append(BodySpoolTests.pattern(2500)) == nil)
        var got: [UInt8] = []
        if case .bytes(let b) = waits.read(at: 0, max: 1000) { got += b }
        var fed = 2500
        while !waits.isWindowFull {
            #expect(waits.append(BodySpoolTests.pattern(500, from: fed)) == nil)
            fed += 500
        }
        #expect(fed - got.count == 5000, "full at one window unread")
        var resumed = 0
        waits.whenRoom { resumed += 1 }
        if case .bytes(let b) = waits.read(at: got.count, max: 1000) { got += b }
        #expect(resumed == 0 && !waits.isWindowFull, "not before half the window is read")
        while resumed == 0, case .bytes(let b) = waits.read(at: got.count, max: 1000) { got += b }
        #expect(resumed == 1 && fed - got.count <= 2500)
        #expect(got == BodySpoolTests.pattern(got.count) && !waits.isSpilled)
        // The transfer ends with more than `memoryBytes` unread: the rest waits in a file, not in memory.
        waits.finish(.success(()))
        #expect(waits.isSpilled && waits.memoryBytes == 0 && waits.state == .complete)
        while case .bytes(let b) = waits.read(at: got.count, max: 1000) { got += b }
        #expect(got == BodySpoolTests.pattern(fed))

        // A feeder that does not wait: past twice the window, the unread bytes go to a file.
        let behind = BodySpool(config: config)
        behind.streamThrough()
        #expect(behind.append(BodySpoolTests.pattern(2500)) == nil)
        guard case .bytes(let first) = behind.read(at: 0, max: 1000) else { Issue.record("bytes"); return }
        for i in 0..<20 { #expect(behind.append(BodySpoolTests.pattern(500, from: 2500 + i * 500)) == nil) }
        #expect(behind.isSpilled && !behind.isStreamingThrough, "10,000 unread bytes went to a file")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).count == 2, "this file and the last one's")
        #expect(behind.append(BodySpoolTests.pattern(1000, from: 12_500)) == nil)
        behind.finish(.success(()))
        var rest = first
        while case .bytes(let b) = behind.read(at: rest.count, max: 700) { rest += b }
        #expect(rest == BodySpoolTests.pattern(13_500), "the reader goes on from the file where it was")
        guard case .failed(let failure) = behind.read(at: 0, max: 10) else { Issue.record("a read before the file fails"); return }
        #expect("\(failure)".contains("gone"))
        #expect(behind.takeFile() == nil && behind.takePartialFile() == nil, "the file does not start the body")

        // The one reader will not read after all (its job follows a redirect): the bytes are counted, not kept.
        let dropped = BodySpool(config: config)
        dropped.streamThrough()
        for i in 0..<20 { #expect(dropped.append(BodySpoolTests.pattern(500, from: i * 500)) == nil) }
        var released = 0
        dropped.whenRoom { released += 1 }
        dropped.discardUnread()
        #expect(released == 1 && !dropped.isWindowFull && dropped.memoryBytes == 0)
        #expect(dropped.append(BodySpoolTests.pattern(500)) == nil && dropped.length == 10_500 && dropped.memoryBytes == 0)

        let notFirst = BodySpool(config: config)
        #expect(notFirst.append(BodySpoolTests.pattern(1500)) == nil)
        notFirst.streamThrough()
        #expect(notFirst.isSpilled && !notFirst.isStreamingThrough, "asked too late: the body is already in its file")
    }

    @Test func aSmallBodyStaysInMemoryAndALargeOneMovesToAFile() throws {
        let dir = BodySpoolTests.directory()
        var config = BodySpool.Config(directory: dir)
        config.memoryBytes = 1000
        config.writeBytes = 300
        let small = BodySpool(config: config)
        #expect(small.append(BodySpoolTests.pattern(1000)) == nil && !small.isSpilled)
        small.finish(.success(()))
        #expect(small.completeInMemory.map(Array.init) == BodySpoolTests.pattern(1000) && small.takeFile() == nil)

        let large = BodySpool(config: config)
        large.expect(5000)
        for i in 0..<50 { #expect(large.append(BodySpoolTests.pattern(100, from: i * 100)) == nil) }
        #expect(large.isSpilled && large.memoryBytes < 400, "memory holds one write buffer, not the body")
        #expect(large.length <= large.receivedBytes && large.length >= 4700, "readers see what was written")
        large.finish(.success(()))
        #expect(BodySpoolTests.readAll(large, max: 777) == BodySpoolTests.pattern(5000))
        let file = try #require(large.takeFile())
        #expect(file.size == 5000 && file.checksum == Int64(bitPattern: BodySpoolTests.pattern(5000).withUnsafeBytes { StripedChecksum.of($0) }))
        #expect(access(file.path, F_OK) == 0)
        #expect(BodySpoolTests.readAll(large) == BodySpoolTests.pattern(5000), "readers go on after the hand-over")
        unlink(file.path)
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// The checksum made as a body arrives, in pieces of any size (the transfer's writes), is the one the store
    /// checks the adopted file with: `StripedChecksum` of the whole body.
    @Test(arguments: [1, 7, 31, 32, 33, 100, 4096])
    func theSpoolsChecksumOverPiecesOfAnySizeIsTheBodysStripedChecksum(piece: Int) {
        for length in [0, 5, 31, 32, 33, 64, 100, 1000, 5003] {
            let body = BodySpoolTests.pattern(length)
            var builder = ChecksumBuilder(count: length)
            var at = 0
            while at < length {
                let n = min(piece, length - at)
                body[at..<(at + n)].withUnsafeBytes { builder.add($0) }
                at += n
            }
            #expect(builder.finish(count: length) == Int64(bitPattern: body.withUnsafeBytes { StripedChecksum.of($0) }),
                    "length \(length), pieces of \(piece)")
        }
    }

    @Test func aBodyOfAnotherLengthThanAnnouncedHasNoChecksumAndAnUntakenFileGoes() throws {
        let dir = BodySpoolTests.directory()
        var config = BodySpool.Config(directory: dir)
        config.memoryBytes = 10
        var path: String?
        do {
            let spool = BodySpool(config: config)
            spool.expect(100)
            #expect(spool.append(BodySpoolTests.pattern(99)) == nil)
            spool.finish(.success(()))
            path = spool.path
            #expect(path != nil && access(path!, F_OK) == 0)
        }
        #expect(access(path!, F_OK) != 0, "nobody took it: removed with the spool")
        let other = BodySpool(config: config)
        other.expect(3)
        _ = other.append(BodySpoolTests.pattern(50))
        other.finish(.success(()))
        #expect(try #require(other.takeFile()).checksum == nil)
        // A body nobody will store forgoes its checksum, even mid-way: what it would say is never made up.
        let unkept = BodySpool(config: config)
        unkept.expect(600)
        _ = unkept.append(BodySpoolTests.pattern(300))
        unkept.forgoChecksum()
        _ = unkept.append(BodySpoolTests.pattern(300, from: 300))
        unkept.finish(.success(()))
        #expect(BodySpoolTests.readAll(unkept) == BodySpoolTests.pattern(600), "its readers are served alike")
        #expect(try #require(unkept.takeFile()).checksum == nil)
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func readersWaitAndAreWokenByEnoughNewBytesOrTheEnd() {
        let spool = BodySpool(config: .init(directory: nil))
        #expect(spool.read(at: 0, max: 10) == .wait)
        var woken = 0
        spool.whenGrows { woken += 1 }
        _ = spool.append(BodySpoolTests.pattern(10))
        spool.announce(nowMs: 0)
        #expect(woken == 0, "10 bytes within 10 ms of the last wake: not yet")
        spool.announce(nowMs: 11)
        #expect(woken == 1)
        spool.whenGrows { woken += 1 }
        _ = spool.append(BodySpoolTests.pattern(BodySpool.wakeBytes))
        spool.announce(nowMs: 12)
        #expect(woken == 2, "64 KiB new: at once")
        spool.whenGrows { woken += 1 }
        spool.finish(.success(()))
        #expect(woken == 3 && spool.read(at: spool.length, max: 10) == .end)
    }

    @Test func aFailureVoidsTheBodyForEveryReader() {
        let spool = BodySpool(config: .init(directory: nil))
        _ = spool.append(BodySpoolTests.pattern(100))
        spool.finish(.failure(.unavailable(curlCode: 18, message: "cut")))
        #expect(spool.read(at: 0, max: 10) == .failed(.unavailable(curlCode: 18, message: "cut")))
        #expect(spool.read(at: 100, max: 10) == .failed(.unavailable(curlCode: 18, message: "cut")))
    }

    @Test func aSpoolThatCannotWriteFailsWithAClearReasonAndItsReadersLearnIt() {
        let spool = BodySpool(config: .init(directory: "/nonexistent-ferry-dir"))
        var woken = false
        spool.whenGrows { woken = true }
        let failure = spool.append(BodySpoolTests.pattern(2 << 20))
        guard case .spoolFailed(let why)? = failure else { Issue.record("\(String(describing: failure))"); return }
        #expect(why.contains("/nonexistent-ferry-dir") && spool.state == .failed)
        #expect(!woken, "not from inside the transport's callback")
        spool.finish(.failure(failure!))  // what the transfer's end does
        #expect(woken, "the reader waiting on it learns it")
    }

    @Test func aReaderThatCaughtUpGetsTheWriteBufferAtOnce() {
        let dir = BodySpoolTests.directory()
        var config = BodySpool.Config(directory: dir)
        config.memoryBytes = 100
        config.writeBytes = 10_000
        let spool = BodySpool(config: config)
        _ = spool.append(BodySpoolTests.pattern(500))   // spilled, in the write buffer
        _ = spool.append(BodySpoolTests.pattern(300, from: 500))
        #expect(spool.isSpilled && spool.length == 0, "nothing written to the file yet")
        #expect(BodySpoolTests.readAll(spool) == BodySpoolTests.pattern(800), "the buffer is written when a reader needs it")
        spool.finish(.success(()))
        try? FileManager.default.removeItem(atPath: dir)
    }
}

@Suite struct StreamingFetchTests {
    /// A harness whose spool keeps 1 KiB in memory, so that small test bodies are spooled to a file.
    static func harness() -> (EngineHarness, String) {
        let dir = BodySpoolTests.directory()
        var spool = BodySpool.Config(directory: dir)
        spool.memoryBytes = 1024
        return (EngineHarness(spool: spool), dir)
    }

    @Test func theAnswerComesWithTheHeadAndEveryWaiterFollowsTheOneDownload() throws {
        let (h, dir) = StreamingFetchTests.harness()
        let a = h.fetch("http://o.test/big")
        let b = h.fetch("http://o.test/big")
        let exchange = h.origin.exchanges[0]
        exchange.sendHead(200, [("Cache-Control", "max-age=600"), ("Content-Length", "10000")])
        guard case .spool(let spool)? = a.outcome?.body, case .spool(let same)? = b.outcome?.body else {
            Issue.record("both answered at the head with the spool"); return
        }
        #expect(spool === same && a.outcome?.cache == .miss && b.outcome?.cache == .coalesced)
        exchange.send(BodySpoolTests.pattern(5000))
        // Halfway: a late joiner gets the same spool and reads it from the start.
        let c = h.fetch("http://o.test/big")
        guard case .spool(let late)? = c.outcome?.body else { Issue.record("the late joiner follows"); return }
        #expect(late === spool && h.origin.exchanges.count == 1 && c.outcome?.cache == .coalesced)
        exchange.send(BodySpoolTests.pattern(5000, from: 5000))
        exchange.end()
        #expect(BodySpoolTests.readAll(late) == BodySpoolTests.pattern(10000))
        // Stored apart once complete: a record pointing at the body, and the body; the next request is a hit.
        #expect(h.storage.records.count == 2)
        let d = h.fetch("http://o.test/big")
        #expect(d.outcome?.cache == .hit && d.bytes == BodySpoolTests.pattern(10000))
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func aTransferThatFailsAfterItsHeadVoidsTheBodyAndStoresNothing() {
        let (h, dir) = StreamingFetchTests.harness()
        let a = h.fetch("http://o.test/cut")
        h.origin.exchanges[0].sendHead(200, [("Cache-Control", "max-age=600")])
        h.origin.exchanges[0].send(BodySpoolTests.pattern(3000))
        h.origin.exchanges[0].fail(.unavailable(curlCode: 18, message: "transfer closed with outstanding read data remaining"))
        guard case .spool(let spool)? = a.outcome?.body else { Issue.record("streams"); return }
        #expect(spool.read(at: 0, max: 100) == .failed(.unavailable(curlCode: 18, message: "transfer closed with outstanding read data remaining")))
        #expect(h.storage.records.isEmpty)
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func theLastReaderLeavingStopsTheTransfer() {
        let (h, dir) = StreamingFetchTests.harness()
        let big = h.fetch("http://o.test/big")
        h.origin.exchanges[0].sendHead(200, [("Cache-Control", "max-age=600"), ("Content-Length", "2000")])
        guard case .spool(let spool)? = big.outcome?.body else { Issue.record("streams"); return }
        big.job?.cancel()
        #expect(h.origin.exchanges[0].cancelled && spool.state == .failed, "stopped, and its spool ends for anyone on it")
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func aRedirectWhoseBodyStreamsIsFollowedOnceItIsStored() {
        let (h, dir) = StreamingFetchTests.harness()
        let a = h.fetch("http://o.test/old")
        h.origin.exchanges[0].sendHead(301, [("Location", "/new"), ("Cache-Control", "max-age=600")])
        h.origin.exchanges[0].send(BodySpoolTests.pattern(3000))
        #expect(h.origin.exchanges.count == 1, "the redirect's body is still arriving: not followed yet")
        h.origin.exchanges[0].end()
        #expect(h.origin.exchanges.count == 2 && h.origin.exchanges[1].request.url == "http://o.test/new")
        h.origin.exchanges[1].respond(200, [("Cache-Control", "max-age=600")], body: "here")
        #expect(a.text == "here" && a.outcome?.redirects == 1)
        let b = h.fetch("http://o.test/old")
        #expect(b.text == "here" && h.origin.exchanges.count == 2, "the redirect and its target were stored")
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func aRequestRightBehindTheOneThatFetchedItWaitsForItToBeStored() {
        let h = EngineHarness()
        h.storage.deferReads = true  // reads answer later, as from disk: storing a Vary response reads its marker first
        let first = h.fetch("http://o.test/v") { $0.headers = [("Accept", "a")] }
        h.storage.answerReads()
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=600"), ("Vary", "Accept")], body: "A")
        #expect(first.text == "A")
        let second = h.fetch("http://o.test/v") { $0.headers = [("Accept", "a")] }
        h.storage.answerReads()
        #expect(second.outcome?.cache == .hit && h.origin.exchanges.count == 1, "a hit, not a second download")
    }

    @Test func theLastWaiterToBeRefusedAResponseStopsItsTransfer() {
        let h = EngineHarness()
        h.fetch("http://o.test/r")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=1, stale-if-error=600"), ("ETag", "\"1\"")], body: "old")
        h.clock.advance(seconds: 5)
        let first = h.fetch("http://o.test/r")
        let second = h.fetch("http://o.test/r")
        #expect(h.origin.exchanges.count == 2, "one validation for both")
        h.origin.exchanges[1].sendHead(500, [("Cache-Control", "no-store")])
        #expect(first.outcome?.cache == .stale && first.text == "old", "the first serves its stale copy and leaves")
        #expect(second.result == nil && h.origin.exchanges.count == 3, "the second may not use a no-store 500: it asks alone")
        #expect(h.origin.exchanges[1].cancelled, "nobody follows the 500 any more: it stops")
    }

    @Test func aResponseThatCameWholeIsServedFromMemory() {
        let (h, dir) = StreamingFetchTests.harness()
        let a = h.fetch("http://o.test/tiny")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=600")], body: "hello")
        guard case .bytes(let bytes)? = a.outcome?.body else { Issue.record("in memory"); return }
        #expect(Array(bytes) == Array("hello".utf8))
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Whether `body`'s bytes lie inside the buffer of `record` (the same memory, not an equal copy).
    static func lies(_ body: ArraySlice<UInt8>, inside record: [UInt8]) -> Bool {
        record.withUnsafeBytes { r in
            body.withUnsafeBytes { b in
                guard let rb = r.baseAddress, let bb = b.baseAddress else { return false }
                return bb >= rb && bb + b.count <= rb + r.count
            }
        }
    }

    /// The image loader keeps what it collects for as long as it likes; the store keeps the record in its memory
    /// tier. They must hold one copy between them: whole at the head, or streamed, the collected body is the
    /// stored record's bytes.
    @Test func aBodyTheStoreKeepsInMemoryIsCollectedAsTheStoresOwnBytes() throws {
        let (h, dir) = StreamingFetchTests.harness()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let whole = h.fetch("http://o.test/whole")
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=600")], body: "a whole picture")
        let streamed = h.fetch("http://o.test/streamed")
        h.origin.exchanges[1].sendHead(200, [("Cache-Control", "max-age=600")])
        var collected: [String: ArraySlice<UInt8>] = [:]
        for (name, pending) in [("whole", whole), ("streamed", streamed)] {
            try #require(pending.outcome).body.collect(limit: 1 << 20) { collected[name] = try? $0.get() }
        }
        #expect(collected["whole"] != nil && collected["streamed"] == nil, "the streamed body is not complete yet")
        h.origin.exchanges[1].send(Array("a streamed one".utf8))
        h.origin.exchanges[1].end()
        for (name, text) in [("whole", "a whole picture"), ("streamed", "a streamed one")] {
            let body = try #require(collected[name], "\(name) collected")
            let record = try #require(h.storage.records["GET http://o.test/\(name)"], "\(name) stored")
            #expect(Array(body) == Array(text.utf8))
            #expect(StreamingFetchTests.lies(body, inside: record), "\(name): the record's bytes, not a copy of them")
        }
    }
}

@Suite struct SpoolCleanupTests {
    /// A no-store request has a transfer of its own, and a response nothing keeps streams to it through memory:
    /// no spool file at any moment; a response the cache keeps still goes through its file to the store.
    @Test func aNoStoreRequestStreamsItsBodyWithoutAFile() throws {
        let (h, dir) = StreamingFetchTests.harness()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = h.fetch("http://o.test/stream") { $0.cacheMode = .noStore }
        h.origin.exchanges[0].sendHead(200, [("Cache-Control", "max-age=600")])
        guard case .spool(let spool)? = a.outcome?.body else { Issue.record("streams"); return }
        var read: [UInt8] = []
        for i in 0..<20 {
            h.origin.exchanges[0].send(BodySpoolTests.pattern(500, from: i * 500))
            while case .bytes(let b) = spool.read(at: read.count, max: 1024) { read += b }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == [])
        }
        h.origin.exchanges[0].end()
        while case .bytes(let b) = spool.read(at: read.count, max: 1024) { read += b }
        #expect(read == BodySpoolTests.pattern(10_000) && spool.isStreamingThrough)

        let b = h.fetch("http://o.test/kept")
        h.origin.exchanges[1].sendHead(200, [("Cache-Control", "max-age=600")])
        h.origin.exchanges[1].send(BodySpoolTests.pattern(5000))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).count == 1, "a body the cache keeps has its file")
        h.origin.exchanges[1].end()
        guard case .spool(let kept)? = b.outcome?.body else { Issue.record("streams"); return }
        #expect(!kept.isStreamingThrough)
    }

    @Test func aSpooledBodyNobodyKeepsLeavesNoFileOnceItsReadersAreDone() throws {
        let (h, dir) = StreamingFetchTests.harness()
        do {
            let a = h.fetch("http://o.test/once")
            h.origin.exchanges[0].sendHead(200, [("Cache-Control", "no-store")])
            h.origin.exchanges[0].send(BodySpoolTests.pattern(5000))
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).count == 1)
            h.origin.exchanges[0].end()
            guard case .spool(let spool)? = a.outcome?.body else { Issue.record("streams"); return }
            #expect(BodySpoolTests.readAll(spool).count == 5000)
            a.job = nil
            a.result = nil
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == [], "the spool file went with its last reader")
        try? FileManager.default.removeItem(atPath: dir)
    }
}
