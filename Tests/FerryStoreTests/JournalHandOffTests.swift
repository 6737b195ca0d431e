import Testing
import FerryCache
@testable import FerryStore

/// `JournalHandOff`: what goes to the worker, what it counts as kept, and an `upTo` that never passes a kept record
/// nor goes back.
@Suite struct JournalHandOffTests {
    func record(_ seq: UInt64, _ key: String = "k") -> JournalRecord {
        JournalRecord(seq: seq, key: CacheKey(trusted: "default", key), entry: CacheEntry(value: [1, 2], createdAt: 1, expiresAt: nil))
    }

    @Test func upToStaysBelowTheOldestKeptRecordAndNeverGoesBack() {
        var h = JournalHandOff(lastWrittenSeq: 10)
        #expect(h.take(oldestKeptSeq: nil) == nil, "nothing new to tell")
        h.keep(record(11, "a"))
        h.add(record(12, "b"))
        h.written(upTo: 12)
        guard let first = h.take(oldestKeptSeq: 11) else { Issue.record("nothing taken"); return }
        #expect(first.records.map(\.seq) == [12] && first.upTo == 10 && first.cost == record(12, "b").cost)
        #expect(h.records.isEmpty && h.cost == 0 && h.recordsHandedOver == 1)
        #expect(h.keptEntries == 1 && h.keptCost == record(11, "a").cost)

        h.addKept(record(11, "a"))   // a job needs it now
        guard let second = h.take(oldestKeptSeq: nil) else { Issue.record("nothing taken"); return }
        #expect(second.records.map(\.seq) == [11] && second.upTo == 12)
        #expect(h.keptEntries == 0 && h.keptCost == 0)
        // An older kept mark reported later (never happens, marks grow) cannot move upTo back.
        h.add(record(13))
        guard let third = h.take(oldestKeptSeq: 5) else { Issue.record("nothing taken"); return }
        #expect(third.upTo == 12)
    }

    @Test func aSupersededKeptRecordIsNeitherHandedNorCounted() {
        var h = JournalHandOff(lastWrittenSeq: 0)
        h.keep(record(1))
        h.dropKept(record(1))
        h.keep(record(2))
        h.written(upTo: 2)
        #expect(h.keptEntries == 1)
        #expect(h.take(oldestKeptSeq: 2)?.upTo == 1)
        #expect(h.take(oldestKeptSeq: 2) == nil, "the same upTo again is nothing new")
        #expect(h.recordsHandedOver == 0)
    }
}
