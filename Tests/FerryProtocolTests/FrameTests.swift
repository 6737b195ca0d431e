import Testing
@testable import FerryProtocol

@Suite struct FrameDecoderTests {
    let frames: [[UInt8]] = [
        FrameEncoder.encode(json: ["id": 1, "op": "hello", "args": ["versions": [1]]]),
        FrameEncoder.encode(json: ["id": 2, "op": "ping"], body: [0, 1, 2, 255]),
        FrameEncoder.encode(json: ["id": 3, "op": "ping"], body: Array(repeating: 7, count: 300)),
    ]

    func decodeAll(_ pieces: [[UInt8]]) throws -> [Frame] {
        let d = FrameDecoder(maxFrameBytes: 65536, maxJSONBytes: 65536)
        var out: [Frame] = []
        for p in pieces {
            d.append(p)
            while let f = try d.next() { out.append(f) }
        }
        #expect(d.pendingBytes == 0)
        return out
    }

    func expected() -> [Frame] {
        frames.map { bytes in
            let jl = Int(bytes[3]) | Int(bytes[2]) << 8
            return Frame(json: Array(bytes[8..<(8 + jl)]), body: Array(bytes[(8 + jl)...]))
        }
    }

    @Test func splitAtEveryByteBoundary() throws {
        let stream = frames.flatMap { $0 }
        let want = expected()
        for cut in 0...stream.count {
            let got = try decodeAll([Array(stream[..<cut]), Array(stream[cut...])])
            #expect(got == want, "cut at \(cut)")
        }
    }

    @Test func oneByteAtATime() throws {
        let stream = frames.flatMap { $0 }
        #expect(try decodeAll(stream.map { [$0] }) == expected())
    }

    @Test func severalFramesInOneRead() throws {
        #expect(try decodeAll([frames.flatMap { $0 }]) == expected())
    }

    @Test func oversizedHeaderRefusedBeforeTheBodyArrives() {
        let d = FrameDecoder(maxFrameBytes: 65536, maxJSONBytes: 65536)
        d.append([0x47, 0x45, 0x54, 0x20, 0, 0, 0, 0])  // "GET " as a length
        #expect(throws: FrameError.envelopeTooLarge(length: 0x47455420, limit: 65536)) { try d.next() }
        let body = FrameDecoder(maxFrameBytes: 1000, maxJSONBytes: 1000)
        body.append([0, 0, 0, 10, 0, 0, 4, 0])  // json 10, body 1024: frame 1042 > 1000
        #expect(throws: FrameError.frameTooLarge(length: 1042, limit: 1000)) { try body.next() }
        #expect(body.buffer.capacity < 64 * 1024, "nothing of the announced size was allocated")
        let empty = FrameDecoder(maxFrameBytes: 1000, maxJSONBytes: 1000)
        empty.append([0, 0, 0, 0, 0, 0, 0, 0])
        #expect(throws: FrameError.emptyEnvelope) { try empty.next() }
    }

    @Test func partialFrameIsReportedAtEOF() throws {
        let d = FrameDecoder(maxFrameBytes: 65536, maxJSONBytes: 65536)
        d.append(Array(frames[1].dropLast()))
        #expect(try d.next() == nil)
        #expect(d.hasPartialFrame)
    }

    /// A reader that takes every frame it can while its body is still arriving, and receives the rest itself: the
    /// stream fed in pieces of every size from 1 byte, the frames it rebuilds are the frames sent, and the decoder
    /// picks up at the next frame each time.
    @Test(arguments: [1, 2, 7, 11, 50, 1000])
    func openFramesTakenAtEveryPoint(piece: Int) throws {
        let stream = frames.flatMap { $0 }
        let d = FrameDecoder(maxFrameBytes: 65536, maxJSONBytes: 65536)
        var got: [Frame] = []
        var open: (json: [UInt8], body: [UInt8], left: Int)?
        var opened = 0
        var at = 0
        while at < stream.count {
            var chunk = Array(stream[at..<min(stream.count, at + piece)])
            at += chunk.count
            if var o = open {
                let n = min(o.left, chunk.count)
                o.body += chunk[..<n]
                o.left -= n
                chunk.removeFirst(n)
                open = o
                if o.left == 0 {
                    got.append(Frame(json: o.json, body: o.body))
                    open = nil
                }
            }
            guard open == nil else { continue }
            d.append(chunk)
            while let f = try d.next() { got.append(f) }
            let taken: Int? = try d.openFrameView(minimumLeft: 1) { view in
                #expect(view.bodyLeft > 0 && view.bodyRead.count + view.bodyLeft == view.bodyLength)
                open = (Array(view.json), Array(view.bodyRead), view.bodyLeft)
                return 1
            }
            if taken != nil {
                opened += 1
                #expect(d.pendingBytes == 0, "the open frame's buffered bytes are dropped")
            }
        }
        #expect(open == nil && d.pendingBytes == 0)
        #expect(got == expected())
        // A piece shorter than the 300-byte body ends inside it; one byte at a time, every frame with a body opens.
        #expect(piece == 1 ? opened == 2 : piece < 300 ? opened >= 1 : opened == 0)
    }

    @Test func anOpenFrameIsOfferedOnlyWhenEnoughIsLeftAndKeptWhenRefused() throws {
        let d = FrameDecoder(maxFrameBytes: 65536, maxJSONBytes: 65536)
        let frame = frames[2]   // 300 bytes of body
        d.append(Array(frame.dropLast(100)))
        var offered = 0
        #expect(try d.openFrameView(minimumLeft: 101) { _ -> Int? in offered += 1; return 1 } == nil)
        #expect(offered == 0, "only 100 bytes are left")
        var seen: (read: Int, left: Int)?
        let refused = try d.openFrameView(minimumLeft: 100) { view -> Int? in
            offered += 1
            seen = (view.bodyRead.count, view.bodyLeft)
            return nil   // refused: the frame stays
        }
        #expect(refused == nil && seen?.read == 200 && seen?.left == 100)
        #expect(offered == 1 && d.pendingBytes == frame.count - 100)
        d.append(Array(frame.suffix(100)))
        #expect(try d.openFrameView(minimumLeft: 1) { _ -> Int? in offered += 1; return 1 } == nil)
        #expect(offered == 1, "a whole frame is taken with next, never offered open")
        #expect(try d.next() == Frame(json: expected()[2].json, body: expected()[2].body))
        // A header and part of the envelope: nothing to offer yet.
        d.append(Array(frame.prefix(12)))
        #expect(try d.openFrameView(minimumLeft: 1) { _ -> Int? in offered += 1; return 1 } == nil)
        #expect(offered == 1)
    }

    @Test func limitsCanBeLiftedBetweenFrames() throws {
        let d = FrameDecoder(maxFrameBytes: 100, maxJSONBytes: 100)
        let big = FrameEncoder.encode(json: ["id": 1, "op": "ping"], body: Array(repeating: 1, count: 500))
        d.append(big)
        #expect(throws: FrameError.self) { try d.next() }
        d.maxFrameBytes = 1000
        #expect(try d.next()?.body.count == 500)
    }

    /// `nextFrame`, the daemon's per-frame call: false (and nothing handled or consumed) until a frame is whole,
    /// then true once per frame, each consumed after its handler ran.
    @Test func nextFrameHandsOverEachWholeFrameOnce() throws {
        let d = FrameDecoder(maxFrameBytes: 1000, maxJSONBytes: 1000)
        let a = FrameEncoder.encode(json: ["id": 1, "op": "ping"]), b = FrameEncoder.encode(json: ["id": 2, "op": "ping"], body: [7, 8])
        var seen: [[UInt8]] = []
        d.append(Array(a.prefix(a.count - 1)))
        #expect(try d.nextFrame { seen.append(Array($0.json)) } == false)
        #expect(seen.isEmpty && d.pendingBytes == a.count - 1)
        d.append(Array(a.suffix(1)) + b)
        #expect(try d.nextFrame { seen.append(Array($0.json)) } == true)
        #expect(try d.nextFrame { seen.append(Array($0.json) + Array($0.body)) } == true)
        #expect(try d.nextFrame { _ in seen.append([]) } == false)
        #expect(seen.count == 2 && seen[1].suffix(2) == [7, 8] && d.pendingBytes == 0)
    }

    /// `peekView` shows the next whole frame without taking it; `delivered` counts the frames taken, by
    /// `nextFrame` and `openFrameView` alike (a frame read ahead is known by it).
    @Test func peekShowsTheNextFrameAndDeliveredCountsTheTaken() throws {
        let d = FrameDecoder(maxFrameBytes: 1 << 20, maxJSONBytes: 1000)
        let a = FrameEncoder.encode(json: ["id": 1, "op": "ping"]), b = FrameEncoder.encode(json: ["id": 2, "op": "ping"], body: [7])
        d.append(Array(a.prefix(5)))
        #expect(d.peekView { _ in true } == nil && d.delivered == 0, "no whole frame")
        d.append(Array(a.dropFirst(5)) + b)
        #expect(d.peekView { Array($0.json) } == Array(a.dropFirst(8)))
        #expect(d.peekView { Array($0.json) } == Array(a.dropFirst(8)), "not taken")
        #expect(d.peekView(from: a.count) { Array($0.body) } == [7], "the frame after the next, from its start")
        #expect(d.peekView(from: a.count + 1) { _ in true } == nil && d.peekView(from: a.count + b.count) { _ in true } == nil)
        #expect(try d.nextFrame { _ in } && d.delivered == 1)
        #expect(d.peekView { Array($0.body) } == [7])
        #expect(try d.nextFrame { _ in } && d.delivered == 2)
        #expect(d.peekView { _ in true } == nil)
        // A frame taken open (its body still to come) counts too.
        let big = FrameEncoder.encode(json: ["id": 3, "op": "cache.set"], body: Array(repeating: 1, count: 100_000))
        d.append(Array(big.prefix(1000)))
        #expect(try d.openFrameView(minimumLeft: 1000) { $0.bodyLeft } != nil && d.delivered == 3)
        // A header over the limits: nothing to peek (`nextView` throws for it).
        d.append([0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0])
        #expect(d.peekView { _ in true } == nil)
        #expect(throws: FrameError.self) { try d.nextFrame { _ in } }
    }
}

@Suite struct ByteBufferTests {
    @Test func growsCompactsAndShrinks() {
        let b = ByteBuffer(capacity: 64)
        b.append(Array(repeating: 1, count: 50))
        b.consume(40)
        // 10 unread; asking for 60 fits after moving them to the front, without growing.
        _ = b.writableSpace(minimum: 54)
        #expect(b.capacity == 64)
        #expect(Array(b.readable) == Array(repeating: 1, count: 10))
        b.append(Array(repeating: 2, count: 1000))
        #expect(b.readableCount == 1010)
        #expect(b.capacity >= 1010)
        b.reset(shrinkTo: 64)
        #expect(b.readableCount == 0 && b.capacity == 64)
    }
}
