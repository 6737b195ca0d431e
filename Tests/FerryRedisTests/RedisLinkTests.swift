import Testing
@testable import FerryRedis

@Suite struct RedisLinkTests {
    @Test func backsOffDoublingToFiveSecondsAndResetsOnSuccess() {
        var link = RedisLink()
        #expect(link.decide(.start, now: 0) == [.connect])
        var t: Int64 = 0
        var waits: [Int64] = []
        for _ in 0..<8 {
            let actions = link.decide(.failed, now: t)
            guard case .retry(let ms)? = actions.last else { Issue.record("no retry: \(actions)"); return }
            #expect(actions.first == .failPending)
            waits.append(ms)
            t += ms
            #expect(link.decide(.retryDue, now: t) == [.connect])
        }
        #expect(waits == [100, 200, 400, 800, 1600, 3200, 5000, 5000])
        #expect(link.decide(.connected, now: t).isEmpty && link.isConnected && link.failures == 0 && link.connections == 1)
        #expect(link.decide(.lost, now: t) == [.failPending, .retry(afterMs: 100)], "a lost connection starts over at 100 ms")
    }

    @Test func anEarlyOrStaleTimerWaitsAndCloseEndsEverything() {
        var link = RedisLink()
        _ = link.decide(.start, now: 0)
        _ = link.decide(.failed, now: 0)
        #expect(link.decide(.retryDue, now: 50) == [.retry(afterMs: 50)], "too early: wait the rest")
        #expect(link.decide(.connected, now: 60).isEmpty && !link.isConnected, "not connecting: ignored")
        #expect(link.decide(.close, now: 70) == [.failPending])
        #expect(link.decide(.retryDue, now: 200).isEmpty && link.state == .closed)
        var up = RedisLink()
        _ = up.decide(.start, now: 0)
        _ = up.decide(.connected, now: 1)
        #expect(up.decide(.close, now: 2) == [.failPending, .disconnect])
    }
}
