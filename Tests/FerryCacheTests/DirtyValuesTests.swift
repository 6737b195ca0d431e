import Testing
@testable import FerryCache

/// `MemoryLRU`'s dirty values: marked for the record written, told when they leave, taken once, and the lowest live
/// mark always known.
@Suite struct DirtyValuesTests {
    /// A map whose departures of dirty values are recorded.
    final class Watched {
        let lru: MemoryLRU<String, Int>
        var left: [(String, Int, UInt64)] = []
        /// The keys of departures that were a `set` replacing the value in place.
        var replacedInPlace: [String] = []
        init(budget: Int = 1000) {
            lru = MemoryLRU(budget: budget)
            lru.dirtyLeft = { [unowned self] key, value, seq, replaced in
                left.append((key, value, seq))
                if replaced { replacedInPlace.append(key) }
            }
        }
    }

    @Test func marksOnlyTheValueTheRecordCarries() {
        let w = Watched()
        w.lru.set("a", 1, cost: 10)
        #expect(w.lru.markDirty("a", seq: 1) { $0 == 2 } == .notHeld)   // memory holds a newer value
        #expect(w.lru.markDirty("b", seq: 2) { _ in true } == .notHeld)  // absent
        #expect(w.lru.oldestDirtySeq == nil)
        #expect(w.lru.markDirty("a", seq: 3) { $0 == 1 } == .marked)
        #expect(w.lru.oldestDirtySeq == 3)
        // A second record of the same value: it now stands for the first, which the caller is told of.
        #expect(w.lru.markDirty("a", seq: 4) { $0 == 1 } == .remarked(previous: 3))
        #expect(w.lru.oldestDirtySeq == 4)
        let taken = w.lru.takeDirty()
        #expect(taken.map(\.key) == ["a"] && taken.map(\.value) == [1] && taken.map(\.seq) == [4])
        #expect(w.lru.takeDirty().isEmpty && w.lru.oldestDirtySeq == nil)
        #expect(w.lru.get("a") == 1)   // taking leaves the value in memory, clean
        #expect(w.left.isEmpty)
    }

    @Test func aDirtyValueLeavingIsToldOnceAndNotTaken() {
        let w = Watched(budget: 30)
        for (i, k) in ["a", "b", "c"].enumerated() {
            w.lru.set(k, i, cost: 10)
            #expect(w.lru.markDirty(k, seq: UInt64(i + 1)) { _ in true } == .marked)
        }
        w.lru.remove("b")                  // deleted
        w.lru.set("a", 9, cost: 10)        // replaced
        w.lru.set("d", 3, cost: 20)        // evicts "c" ("a", just replaced, has a second chance)
        #expect(w.left.map(\.0) == ["b", "a", "c"] && w.left.map(\.1) == [1, 0, 2] && w.left.map(\.2) == [2, 1, 3])
        #expect(w.replacedInPlace == ["a"])   // the delete and the eviction are not replacements
        #expect(w.lru.oldestDirtySeq == nil && w.lru.takeDirty().isEmpty)
        #expect(w.lru.get("a") == 9 && w.lru.get("d") == 3)
        w.lru.remove("a")                  // clean: nothing to tell
        #expect(w.left.count == 3)
    }

    @Test func theOldestMarkFollowsWhatIsStillDirty() {
        let w = Watched()
        for i in 0..<5 { w.lru.set("k\(i)", i, cost: 1) }
        for i in 0..<5 { #expect(w.lru.markDirty("k\(i)", seq: UInt64(10 + i)) { _ in true } == .marked) }
        #expect(w.lru.oldestDirtySeq == 10)
        w.lru.set("k0", 100, cost: 1)      // k0's mark goes with its value
        #expect(w.lru.oldestDirtySeq == 11)
        w.lru.remove("k2")
        w.lru.remove("k1")
        #expect(w.lru.oldestDirtySeq == 13)
        #expect(w.lru.markDirty("k0", seq: 20) { $0 == 100 } == .marked)
        #expect(w.lru.takeDirty().map(\.seq) == [13, 14, 20])
        // A slot freed and reused by another key does not carry the old mark.
        #expect(w.lru.markDirty("k3", seq: 21) { _ in true } == .marked)
        w.lru.remove("k3")
        w.lru.set("new", 7, cost: 1)
        #expect(w.lru.oldestDirtySeq == nil && w.lru.takeDirty().isEmpty)
    }

    /// One key rewritten and marked again and again between two takes: the order's dead pairs are compacted, and the
    /// oldest mark stays right throughout.
    @Test func aHotKeyRewrittenManyTimes() {
        let w = Watched()
        w.lru.set("cold", 0, cost: 1)
        #expect(w.lru.markDirty("cold", seq: 1) { _ in true } == .marked)
        for n in 2..<50_000 {
            w.lru.set("hot", n, cost: 1)
            #expect(w.lru.markDirty("hot", seq: UInt64(n)) { $0 == n } == .marked)
        }
        #expect(w.left.count == 49_997)    // every hot value but the last was displaced dirty
        #expect(w.lru.oldestDirtySeq == 1)
        #expect(w.lru.dirtyOrder.count < 10_000)
        w.lru.remove("cold")
        #expect(w.lru.oldestDirtySeq == 49_999)
        #expect(w.lru.takeDirty().map(\.value) == [49_999])
    }

    /// `markDirty` at the place `lastSet` gave: used while the slot holds that key's entry, even after its value was
    /// replaced in place; the key looked up when the entry left or its slot went to another key.
    @Test func aSlotHintIsTrustedOnlyWhileItsKeyStaysInTheSlot() {
        let w = Watched(budget: 20)
        w.lru.set("a", 1, cost: 10)
        let a = w.lru.lastSet
        w.lru.set("a", 2, cost: 10)                       // replaced in place: the same place
        #expect(w.lru.lastSet == a)
        #expect(w.lru.markDirty("a", seq: 1, at: a) { $0 == 2 } == .marked)
        w.lru.remove("a")                                 // told (dirty), slot freed
        w.lru.set("b", 3, cost: 10)                       // takes a's slot, with a new stamp
        let b = w.lru.lastSet
        #expect(b.slot == a.slot && b.stamp != a.stamp)
        // a's hint now names b's slot: not trusted, and "a" is looked up (absent).
        #expect(w.lru.markDirty("a", seq: 2, at: a) { _ in true } == .notHeld)
        #expect(w.lru.oldestDirtySeq == nil)
        // A stale hint for a key that moved: found by lookup all the same.
        w.lru.remove("b")
        w.lru.set("c", 4, cost: 10)
        w.lru.set("b", 5, cost: 10)
        #expect(w.lru.lastSet.slot != b.slot)
        #expect(w.lru.markDirty("b", seq: 3, at: b) { $0 == 5 } == .marked)
        #expect(w.lru.takeDirty().map(\.key) == ["b"])
        // A set too large to keep keeps no place.
        w.lru.set("z", 6, cost: 100)
        #expect(w.lru.lastSet == .none)
    }
}
