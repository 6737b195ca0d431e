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
        let path = NSTemporaryDirectory() + "ferry-loop-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let listener = LoopPipeListener(loop: loop)
        try listener.bind(path: path)
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
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &addr.sun_path) { raw in
                for (i, b) in path.utf8.enumerated() { raw[i] = b }
            }
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
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
}
