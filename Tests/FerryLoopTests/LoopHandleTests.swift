import Foundation
import Synchronization
import Testing
@testable import FerryLoop

/// State touched only on the loop thread, carried through the mailbox's Sendable closures.
final class LoopOnly<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

/// The loop's handles on a real libuv loop: each test counts what its callbacks did and checks that `run` returns
/// once every handle is closed.
@Suite struct LoopHandleTests {
    /// A listener bound to a fresh socket path in the temporary directory; the caller unlinks the path.
    static func boundListener(_ loop: EventLoop) throws -> (listener: LoopPipeListener, path: String) {
        let path = NSTemporaryDirectory() + "ferry-loop-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let listener = LoopPipeListener(loop: loop)
        try listener.bind(path: path)
        return (listener, path)
    }

    @Test func aTimerFiresOnceAndTheLoopEndsWhenItCloses() {
        let loop = EventLoop()
        var fired = 0
        let start = loop.nowMs
        var at: UInt64 = 0
        let timer = LoopTimer(loop: loop) { t in
            fired += 1
            at = loop.nowMs
            t.close()
        }
        timer.start(afterMs: 20)
        loop.run()
        #expect(fired == 1 && at >= start + 20)
    }

    @Test func postsFromOtherThreadsRunOnTheLoopInOrder() {
        let loop = EventLoop()
        let mailbox = LoopMailbox(loop: loop)
        let post = mailbox.post
        let loopThread = pthread_self()
        let state = LoopOnly((received: [Int](), offLoop: 0, mailbox: mailbox))
        Thread.detachNewThread {
            for n in 0..<100 {
                post {
                    if pthread_equal(pthread_self(), loopThread) == 0 { state.value.offLoop += 1 }
                    state.value.received.append(n)
                    if state.value.received.count == 100 { state.value.mailbox.close() }
                }
            }
        }
        loop.run()
        #expect(state.value.received == Array(0..<100) && state.value.offLoop == 0)
    }

    @Test func theIterationHookRunsEveryIteration() {
        let loop = EventLoop()
        var iterations = 0
        var ticks = 0
        var hook: LoopIterationHook?
        let timer = LoopTimer(loop: loop) { t in
            ticks += 1
            if ticks == 3 {
                t.close()
                hook?.close()
            } else {
                t.start(afterMs: 1)
            }
        }
        hook = LoopIterationHook(loop: loop) { iterations += 1 }
        timer.start(afterMs: 1)
        loop.run()
        #expect(ticks == 3 && iterations >= 3, "at least once per timer iteration (\(iterations))")
    }

    @Test func aPipeListenerAcceptsAndAPipeReadsAndWrites() throws {
        let loop = EventLoop()
        let (listener, path) = try Self.boundListener(loop)
        defer { unlink(path) }
        final class Echo: LoopPipeDelegate {
            let pipe: LoopPipe
            var buffer = [UInt8](repeating: 0, count: 64)
            var got: [UInt8] = []
            let done: () -> Void
            init(_ pipe: LoopPipe, done: @escaping () -> Void) {
                self.pipe = pipe
                self.done = done
            }
            func pipeReadSpace() -> UnsafeMutableRawBufferPointer { buffer.withUnsafeMutableBytes { $0 } }
            func pipeDidRead(_ n: Int) {
                guard n > 0 else { return done() }
                got += buffer.prefix(n)
                _ = got.withUnsafeBytes { pipe.tryWrite(UnsafeRawBufferPointer(rebasing: $0[(got.count - n)...])) }
            }
            func pipeDidWrite(count: Int, status: Int32) {}
        }
        var echo: Echo?
        var uid: UInt32?
        var sendBuffer: Int?
        try listener.listen(backlog: 8) { status in
            guard status == 0, let pipe = listener.accept() else { return }
            uid = pipe.peerUID()
            sendBuffer = pipe.setSendBuffer(bytes: 1 << 20)
            let e = Echo(pipe) {
                pipe.close()
                listener.close()
            }
            pipe.delegate = e
            echo = e
            pipe.startReading()
        }
        let reply = Mutex<[UInt8]>([])
        Thread.detachNewThread {
            let fd = connectUnix(path)
            _ = "ping".withCString { write(fd, $0, 4) }
            var buf = [UInt8](repeating: 0, count: 4)
            var have = 0
            while have < 4 {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress! + have, 4 - have) }
                if n <= 0 { break }
                have += n
            }
            let got = Array(buf.prefix(have))
            reply.withLock { $0 = got }
            close(fd)
        }
        loop.run()
        #expect(echo?.got == Array("ping".utf8))
        #expect(reply.withLock { $0 } == Array("ping".utf8), "echoed through tryWrite")
        #expect(uid == getuid())
        // SO_SNDBUF: Linux doubles what is asked, up to twice net.core.wmem_max.
        let wmemMax = (try? String(contentsOfFile: "/proc/sys/net/core/wmem_max", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        if let wmemMax { #expect(sendBuffer == min(2 << 20, 2 * wmemMax)) } else { #expect(sendBuffer != nil) }
    }

    /// Queued writes keep large bodies as they are (`write(copying:thenKeeping:owner:)`): the owner lives while
    /// its bytes wait in libuv (the peer reads nothing yet) and is let go once written; every byte arrives in the
    /// order queued, copied heads and kept bodies alike, and `pipeDidWrite` counts each write whole.
    @Test func keptWritesHoldTheirOwnerUntilWrittenAndArriveInOrder() throws {
        let loop = EventLoop()
        let (listener, path) = try Self.boundListener(loop)
        defer { unlink(path) }
        final class Owner {
            let bytes: [UInt8]
            init(_ bytes: [UInt8]) { self.bytes = bytes }
        }
        final class Writer: LoopPipeDelegate {
            let pipe: LoopPipe
            var written: [Int] = []
            var ownersAtEachWrite: [Int] = []
            var owners: [Weak] = []
            let expected: Int
            var space = [UInt8](repeating: 0, count: 16)
            init(_ pipe: LoopPipe, expected: Int) { (self.pipe, self.expected) = (pipe, expected) }
            func pipeReadSpace() -> UnsafeMutableRawBufferPointer { space.withUnsafeMutableBytes { $0 } }
            func pipeDidRead(_ n: Int) {}
            func pipeDidWrite(count: Int, status: Int32) {
                written.append(status == 0 ? count : -1)
                ownersAtEachWrite.append(owners.filter { $0.object != nil }.count)
                if written.count == expected { pipe.close() }
            }
        }
        final class Weak { weak var object: AnyObject?; init(_ o: AnyObject) { object = o } }
        let bodies = (0..<3).map { k in (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ k) } }
        let heads = (0..<3).map { k in Array("head \(k)|".utf8) }
        var sent: [UInt8] = []
        for k in 0..<3 { sent += heads[k] + bodies[k] }
        sent += Array("copied".utf8)
        let writer = LoopOnly<Writer?>(nil)
        let aliveWhileUnread = LoopOnly<Int>(-1)
        let go = Mutex(false)
        try listener.listen(backlog: 8) { status in
            guard status == 0, let pipe = listener.accept() else { return }
            listener.close()
            let w = Writer(pipe, expected: 4)
            pipe.delegate = w
            writer.value = w
            for k in 0..<3 {
                let owner = Owner(bodies[k])
                w.owners.append(Weak(owner))
                let queued = heads[k].withUnsafeBytes { head in
                    owner.bytes.withUnsafeBytes { pipe.write(copying: head, thenKeeping: $0, owner: owner) }
                }
                #expect(queued)
            }
            #expect(Array("copied".utf8).withUnsafeBytes { pipe.write(copying: $0) })
            // The owners are held by the queued writes alone now; the peer reads only once told to.
            let check = LoopTimer(loop: loop) { timer in
                aliveWhileUnread.value = w.owners.filter { $0.object != nil }.count
                timer.close()
                go.withLock { $0 = true }
            }
            check.start(afterMs: 50)
        }
        let received = Mutex<[UInt8]?>(nil)
        Thread.detachNewThread {
            let fd = connectUnix(path)
            while !go.withLock({ $0 }) { usleep(1000) }
            var all: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if n <= 0 { break }
                all += buf.prefix(n)
            }
            received.withLock { $0 = all }
            close(fd)
        }
        loop.run()
        // The loop ends once the last write is done; the reader may still be taking the last bytes.
        let waitUntil = Date().addingTimeInterval(30)
        while received.withLock({ $0 }) == nil && Date() < waitUntil { usleep(1000) }
        #expect(aliveWhileUnread.value == 3, "900 KB cannot all be in the socket yet: every owner is held")
        #expect(writer.value?.written == heads.indices.map { heads[$0].count + bodies[$0].count } + [6])
        #expect(writer.value?.ownersAtEachWrite == [2, 1, 0, 0], "each owner is let go as its write ends")
        let got = received.withLock { $0 } ?? []
        #expect(got.count == sent.count && got == sent)
    }

    /// What `Connection` relies on: an end of stream is told once and reading stops there (the socket stays
    /// readable at its end, and libuv's poll is level-triggered); a write the kernel refused is queued, and nothing
    /// written with `tryWrite` overtakes it; closing cancels what is still queued, with `LoopPipe.cancelled`, and
    /// lets its owner go.
    @Test func anEndOfStreamIsToldOnceAndClosingCancelsQueuedWrites() throws {
        let loop = EventLoop()
        let (listener, path) = try Self.boundListener(loop)
        defer { unlink(path) }
        final class Owner {}
        final class Recorder: LoopPipeDelegate {
            let pipe: LoopPipe
            var reads: [Int] = []
            var writes: [(count: Int, status: Int32)] = []
            var space = [UInt8](repeating: 0, count: 64)
            weak var owner: Owner?
            var overtaking = -1
            let loop: EventLoop
            init(_ pipe: LoopPipe, loop: EventLoop) { (self.pipe, self.loop) = (pipe, loop) }
            func pipeReadSpace() -> UnsafeMutableRawBufferPointer { space.withUnsafeMutableBytes { $0 } }
            func pipeDidRead(_ n: Int) {
                reads.append(n)
                guard n == LoopPipe.endOfFile else { return }
                // The peer reads nothing: 4 MB cannot all go, so the write stays queued.
                let body = [UInt8](repeating: 7, count: 4 << 20)
                let owner = Owner()
                self.owner = owner
                let queued = Array("head".utf8).withUnsafeBytes { head in
                    body.withUnsafeBytes { pipe.write(copying: head, thenKeeping: $0, owner: BodyOwner(body, owner)) }
                }
                #expect(queued)
                let wait = LoopTimer(loop: loop) { [self] timer in
                    timer.close()
                    overtaking = Array("late".utf8).withUnsafeBytes { pipe.tryWrite($0) }
                    pipe.close()
                }
                wait.start(afterMs: 100)
            }
            func pipeDidWrite(count: Int, status: Int32) { writes.append((count, status)) }
        }
        final class BodyOwner { let body: [UInt8]; let owner: Owner; init(_ b: [UInt8], _ o: Owner) { (body, owner) = (b, o) } }
        let recorder = LoopOnly<Recorder?>(nil)
        try listener.listen(backlog: 8) { status in
            guard status == 0, let pipe = listener.accept() else { return }
            listener.close()
            let r = Recorder(pipe, loop: loop)
            pipe.delegate = r
            recorder.value = r
            pipe.startReading()
        }
        let done = Mutex(false)
        Thread.detachNewThread {
            let fd = connectUnix(path)
            _ = "abc".withCString { write(fd, $0, 3) }
            shutdown(fd, Int32(SHUT_WR))
            while !done.withLock({ $0 }) { usleep(1000) }
            close(fd)
        }
        loop.run()
        done.withLock { $0 = true }
        let r = try #require(recorder.value)
        #expect(r.reads == [3, LoopPipe.endOfFile], "the end of stream once, though the socket stayed readable 100 ms")
        #expect(r.overtaking == 0, "nothing goes ahead of a queued write")
        #expect(r.writes.count == 1 && r.writes.first?.count == 4 + (4 << 20) && r.writes.first?.status == LoopPipe.cancelled)
        #expect(r.owner == nil, "the cancelled write let its owner go")
    }
}

/// A plain client socket connected to `path` (the peer of a `LoopPipe` under test).
private func connectUnix(_ path: String) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        for (i, b) in path.utf8.enumerated() { raw[i] = b }
    }
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
    return fd
}
