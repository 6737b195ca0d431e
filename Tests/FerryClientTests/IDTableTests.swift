import Testing
@testable import FerryClient

/// `IDTable` against `Dictionary` as the model: the same answers for every operation, through growth, removals in
/// the middle of probe runs, and ids as the client makes them (counting up, a few kept for long).
@Suite struct IDTableTests {
    /// xorshift64*, seeded: the same sequence every run.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    @Test func answersAsADictionaryDoesThroughGrowthAndRemovals() {
        var table = IDTable<Int>(), model: [UInt64: Int] = [:]
        var random = Random(state: 0x5EED)
        var nextID: UInt64 = 1
        for step in 0..<200_000 {
            let r = random.next()
            switch r % 10 {
            case 0...3:
                // A new request: ids count up.
                table[nextID] = step
                model[nextID] = step
                nextID += 1
            case 4...6:
                // A reply: usually a recent id, sometimes an old one still in flight, sometimes one long gone.
                let back = (r >> 8) % 3 == 0 ? (r >> 16) % nextID : (r >> 16) % 64
                let id = nextID > back ? nextID - back : 1
                #expect(table.removeValue(forKey: id) == model.removeValue(forKey: id))
            case 7:
                let id = 1 + (r >> 16) % nextID
                table[id] = nil
                model[id] = nil
            default:
                let id = 1 + (r >> 16) % (nextID + 10)
                #expect(table[id] == model[id])
            }
            #expect(table.count == model.count)
        }
        for id in 1...(nextID + 10) { #expect(table[id] == model[id]) }
    }

    /// Ids whose homes collide, removed from the front, middle and back of their run, with the run wrapping around
    /// the end of the slots.
    @Test func removalsInsideARunKeepTheRestFindable() {
        for victim in 0..<40 {
            var table = IDTable<UInt64>()
            let ids = (1...UInt64(40)).map { $0 * 1_000_003 }
            for id in ids { table[id] = id }
            #expect(table.removeValue(forKey: ids[victim]) == ids[victim])
            for (k, id) in ids.enumerated() { #expect(table[id] == (k == victim ? nil : id)) }
            #expect(table.count == 39)
        }
    }

    @Test func replacingAValueKeepsOneEntry() {
        var table = IDTable<String>()
        table[3] = "a"
        table[3] = "b"
        #expect(table.count == 1 && table[3] == "b")
        #expect(table.removeValue(forKey: 3) == "b")
        #expect(table.removeValue(forKey: 3) == nil)
        #expect(table.isEmpty)
    }

    @Test func removeAllHandsOverEveryValue() {
        var table = IDTable<Int>()
        for id in 1...UInt64(100) { table[id] = Int(id) }
        #expect(table.removeAll().sorted() == Array(1...100))
        #expect(table.isEmpty && table[5] == nil)
        table[5] = 5
        #expect(table[5] == 5)
    }
}
