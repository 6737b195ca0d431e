import Testing
@testable import FerryFetch

/// Work counted per key: what waits runs once, after the last piece of that key's work, never for another key's.
@Suite struct WorkByKeyTests {
    @Test func waitersRunAfterTheLastPieceOfTheirKeysWork() {
        var work = WorkByKey()
        var ran: [String] = []
        #expect(!work.whenDone("a") { ran.append("early") }, "nothing in progress: the caller runs it")
        work.begin("a")
        work.begin("a")
        work.begin("b")
        #expect(work.whenDone("a") { ran.append("a1") } && work.whenDone("a") { ran.append("a2") })
        #expect(work.whenDone("b") { ran.append("b") })
        #expect(work.end("a").isEmpty, "one piece of a's work still runs")
        for next in work.end("b") { next() }
        #expect(ran == ["b"])
        for next in work.end("a") { next() }
        #expect(ran == ["b", "a1", "a2"])
        #expect(!work.whenDone("a") {} && !work.whenDone("b") {}, "nothing in progress any more")
        #expect(work.end("a").isEmpty, "an end without a begin is nothing")
    }
}
