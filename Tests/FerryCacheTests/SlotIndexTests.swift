import Testing
@testable import FerryCache

/// The LRU's hash index: every slot stays findable through inserts, removals (backward shifts across runs that
/// wrap around the table) and growth, and keys are compared only where the hash matches.
@Suite struct SlotIndexTests {
    @Test func agreesWithADictionaryThroughRandomInsertsAndRemovals() {
        var index = SlotIndex()
        var model: [Int: Int] = [:]  // slot → hash
        var rng = SystemRandomNumberGenerator()
        var nextSlot = 0
        for step in 0..<20_000 {
            // Few distinct hashes, many equal low bits: long runs, wrap-around, equal hashes for different slots.
            if model.isEmpty || Int.random(in: 0..<3, using: &rng) > 0 {
                let hash = Int.random(in: 0..<64, using: &rng) * 1024 + (step % 3 == 0 ? 15 : 0)
                index.insert(hash: hash, slot: nextSlot)
                model[nextSlot] = hash
                nextSlot += 1
            } else {
                let (slot, hash) = model.randomElement(using: &rng)!
                #expect(index.remove(hash: hash) { $0 == slot })
                model[slot] = nil
            }
            if step % 500 == 0 {
                for (slot, hash) in model { #expect(index.find(hash: hash) { $0 == slot } == slot) }
            }
        }
        #expect(index.count == model.count)
        for (slot, hash) in model { #expect(index.find(hash: hash) { $0 == slot } == slot) }
        #expect(index.find(hash: 7) { _ in true } == nil, "a hash never inserted")
        #expect(!index.remove(hash: 7) { _ in true })
    }

    @Test func keysAreComparedOnlyWhereTheHashMatches() {
        var index = SlotIndex()
        for slot in 0..<1000 { index.insert(hash: slot &* 0x1E37_79B9_7F4A_7C15, slot: slot) }
        var compared = 0
        let found = index.find(hash: 500 &* 0x1E37_79B9_7F4A_7C15) { slot in
            compared += 1
            return slot == 500
        }
        #expect(found == 500 && compared == 1)
    }
}
