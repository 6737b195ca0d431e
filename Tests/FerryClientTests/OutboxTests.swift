#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import FerryClient

/// The outbox on one end of a socket pair; the test reads the other end without blocking, so "nothing written
/// yet" is an empty read, not a hang.
@Suite struct OutboxTests {
    final class Pair {
        let ours: Int32, theirs: Int32
        init() {
            var fds: [Int32] = [-1, -1]
            precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            (ours, theirs) = (fds[0], fds[1])
        }
        deinit {
            close(ours)
            close(theirs)
        }
        /// Everything readable now, in order.
        func written() -> [UInt8] {
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = recv(theirs, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if n <= 0 { return out }
                out += buffer[..<n]
            }
        }
    }

    @Test func aRequestWithNoResumedCallPendingIsWrittenAtOnce() {
        let pair = Pair(), outbox = Outbox(fd: pair.ours)
        #expect(outbox.send([[1, 2], [3]], if: { true }))
        #expect(pair.written() == [1, 2, 3])
        #expect(!outbox.mayHoldFrames)
    }

    @Test func requestsWaitForTheLastResumedCallThenLeaveTogetherInOrder() {
        let pair = Pair(), outbox = Outbox(fd: pair.ours)
        outbox.resuming(3)
        #expect(outbox.send([[1]], if: { true }))
        #expect(!outbox.resumed())
        #expect(outbox.send([[2]], if: { true }))
        #expect(!outbox.resumed())
        #expect(pair.written() == [], "two of three resumed calls have run: the batch waits")
        #expect(outbox.holdsFrames && outbox.mayHoldFrames)
        #expect(outbox.resumed(), "the last one to run is told so")
        #expect(outbox.flush())
        #expect(pair.written() == [1, 2], "and writes the batch")
        #expect(!outbox.mayHoldFrames)
    }

    @Test func aFullBatchLeavesWithoutWaiting() {
        let pair = Pair(), outbox = Outbox(fd: pair.ours)
        outbox.resuming(1)
        for k in 1..<Outbox.batchRequests { #expect(outbox.send([[UInt8(k)]], if: { true })) }
        #expect(pair.written() == [])
        #expect(outbox.send([[UInt8(Outbox.batchRequests)]], if: { true }))
        #expect(pair.written() == (1...Outbox.batchRequests).map { UInt8($0) })
        #expect(outbox.resumed())
        #expect(outbox.flush())
        #expect(pair.written() == [])
    }

    @Test func aLargeRequestGoesDirectlyAfterWhatWasQueued() throws {
        let pair = Pair(), outbox = Outbox(fd: pair.ours)
        // Room for it all in the socket (a Unix socket counts the sender's buffer), so the write cannot block.
        var size: Int32 = 4 << 20
        setsockopt(pair.ours, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        outbox.resuming(1)
        #expect(outbox.send([[7, 7]], if: { true }))
        let large = [UInt8](repeating: 9, count: Outbox.directBytes)
        #expect(outbox.send([large], if: { true }))
        let got = pair.written()
        #expect(got.count == 2 + Outbox.directBytes && got.prefix(3) == [7, 7, 9])
        #expect(!outbox.holdsFrames)
    }

    /// The reader thread's writes (not `blocking`): a request larger than the socket takes is written in part and
    /// the rest stays queued, in front of what comes later; nothing waits for the peer to read.
    @Test func theReaderThreadWritesWhatTheSocketTakesAndKeepsTheRestInOrder() {
        let pair = Pair(), outbox = Outbox(fd: pair.ours)
        var size: Int32 = 64 << 10
        setsockopt(pair.ours, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let large = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(outbox.send([large], if: { true }, blocking: false), "returns without waiting for the peer")
        #expect(outbox.holdsFrames, "what the socket did not take is still queued")
        #expect(outbox.send([[1, 2, 3]], if: { true }, blocking: false))
        #expect(outbox.flushAvailable() == .socketFull)
        var got: [UInt8] = []
        for _ in 0..<10_000 where got.count < large.count + 3 {
            got += pair.written()
            _ = outbox.flushAvailable()
        }
        #expect(got == large + [1, 2, 3])
        #expect(outbox.flushAvailable() == .done && !outbox.holdsFrames)
    }

    /// Calls resumed on the reader thread queue their requests; the reader writes them once all ran (a full batch
    /// of 16 leaves at once, so that ferryd starts on it meanwhile).
    @Test func callsResumedOnTheReaderThreadLeaveWhenTheReaderFlushes() {
        let pair = Pair(), outbox = Outbox(fd: pair.ours)
        outbox.resuming(2)
        #expect(outbox.send([[1]], if: { true }, blocking: false))
        #expect(!outbox.resumed())
        #expect(outbox.send([[2]], if: { true }, blocking: false))
        #expect(outbox.resumed())
        #expect(outbox.send([[3]], if: { true }, blocking: false), "sent after the last resumed call ran")
        #expect(pair.written() == [])
        #expect(outbox.flushAvailable() == .done)
        #expect(pair.written() == [1, 2, 3])
        for k in 1...Outbox.batchRequests { #expect(outbox.send([[UInt8(k)]], if: { true }, blocking: false)) }
        #expect(pair.written() == (1...Outbox.batchRequests).map { UInt8($0) })
    }

    @Test func anUnwantedRequestIsNotSent() {
        let pair = Pair(), outbox = Outbox(fd: pair.ours)
        var asked = 0
        #expect(outbox.send([[1]], if: { asked += 1; return false }))
        #expect(outbox.send([[UInt8](repeating: 1, count: Outbox.directBytes)], if: { asked += 1; return false }))
        #expect(asked == 2)
        #expect(pair.written() == [] && !outbox.holdsFrames)
    }

    @Test func aClosedPeerFailsTheWrite() {
        let pair = Pair(), outbox = Outbox(fd: pair.ours)
        shutdown(pair.theirs, Int32(SHUT_RD))
        shutdown(pair.ours, Int32(SHUT_WR))
        #expect(!outbox.send([[1]], if: { true }))
    }
}

@Suite struct ThreadLockTests {
    @Test func threadsCountingUnderTheLockLoseNothing() async {
        let lock = ThreadLock(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { for _ in 0..<10_000 { lock.withLock { $0 += 1 } } } }
        }
        #expect(lock.withLock { $0 } == 80_000)
    }
}
