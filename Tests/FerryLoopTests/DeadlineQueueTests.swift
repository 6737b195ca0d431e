import Testing
@testable import FerryLoop

@Suite struct DeadlineQueueTests {
    @Test func popsInDeadlineOrderWithAnInjectedClock() {
        var q = DeadlineQueue<String>()
        q.schedule("c", at: 300)
        q.schedule("a", at: 100)
        q.schedule("b", at: 200)
        q.schedule("a2", at: 100)
        #expect(q.nextDeadline == 100)
        #expect(q.popExpired(now: 99).isEmpty)
        #expect(q.popExpired(now: 100) == ["a", "a2"], "ties keep schedule order")
        #expect(q.nextDeadline == 200)
        #expect(q.popExpired(now: 1000) == ["b", "c"])
        #expect(q.isEmpty && q.nextDeadline == nil)
    }

    @Test func compactKeepsOnlyLiveEntriesInOrder() {
        var q = DeadlineQueue<Int>()
        for k in (0..<100).reversed() { q.schedule(k, at: UInt64(k)) }
        q.compact { $0 % 3 == 0 }
        #expect(q.count == 34)
        #expect(q.popExpired(now: 1000) == Array(stride(from: 0, to: 100, by: 3)))
    }

    @Test func manyRandomDeadlinesComeOutSorted() {
        var q = DeadlineQueue<UInt64>()
        var rng = SystemRandomNumberGenerator()
        let values = (0..<2000).map { _ in UInt64.random(in: 0..<10_000, using: &rng) }
        for v in values { q.schedule(v, at: v) }
        var out: [UInt64] = []
        var now: UInt64 = 0
        while !q.isEmpty {
            now += 137
            out += q.popExpired(now: now)
        }
        #expect(out == values.sorted())
    }
}
