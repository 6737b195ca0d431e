import Testing
import FerryCache
@testable import FerryStore

/// `IndexOrder` sorts by words and falls back to bytes; its order must be `StoreEngine.indexOrder`'s (SQLite's) for
/// every key, above all where the words alone would mislead: a run ending where the other has a zero byte, runs
/// longer than the words, namespaces that are prefixes of each other.
@Suite struct IndexOrderTests {
    private func expectSameOrder(_ keys: [CacheKey], _ comment: Comment? = nil) {
        let sorted = IndexOrder.positions(of: keys).map { keys[$0] }
        #expect(sorted == keys.sorted(by: StoreEngine.indexOrder), comment)
    }

    /// (`trusted`: the order must hold for any bytes, also those the namespace rules refuse.)
    @Test func theWordsOrderAsTheBytesDo() {
        let keys = [("default", "b"), ("default", "B"), ("default", "é"), ("default", "e\u{301}"), ("default", "ab"),
                        ("default", "a"), ("defaults", "a"), ("d", "z"), ("default", "🙂"), ("default", "ﬀ"),
                        ("default", "a\u{0}b"), ("default", "a\u{0}"), ("default", "a\u{0}\u{0}"),
                        ("default", "key:000000001234"), ("default", "key:000000001233"), ("default", "key:00000000123"),
                        ("default", "key:0000000012345"), ("default", "key:0000000012340"), ("default", "key:000000001234\u{0}"),
                        ("a-very-long-namespace", "k"), ("a-very-long-namespace-2", "a"), ("a-very-long-namespac", "z"),
                        ("abcdefgh", "k"), ("abcdefghi", "a"), ("abcdefg", "z"), ("abcdefg\u{0}", "a"),
                        ("http", "https://example.com/a/very/long/path/one"), ("http", "https://example.com/a/very/long/path/two"),
                        ("http", "https://example.com/a/very/long/path"), ("http", "")]
            .map { CacheKey(trusted: $0.0, $0.1) }
        expectSameOrder(keys)
        expectSameOrder(keys.reversed())
    }

    /// Random keys over a small alphabet with zero and high bytes, of lengths around the words' 8 and 16 bytes: many
    /// share their words, so both the words and the fallback decide.
    @Test func randomKeysSortAsTheIndexDoes() {
        var rng = XorShift(seed: 12)
        let alphabet: [Character] = ["\u{0}", "a", "b", "\u{7f}", "é"]
        func text(_ maxCount: Int) -> String {
            String((0..<Int(rng.next() % UInt64(maxCount + 1))).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
        }
        for round in 0..<20 {
            var seen = Set<CacheKey>()
            for _ in 0..<300 {
                seen.insert(CacheKey(trusted: "n" + text(10), text(20)))
            }
            expectSameOrder(Array(seen), "round \(round)")
        }
    }

    @Test func noKeysAndOneKey() {
        #expect(IndexOrder.positions(of: []).isEmpty)
        #expect(IndexOrder.positions(of: [CacheKey(trusted: "default", "a")]) == [0])
    }
}

/// A small deterministic generator (xorshift64), so that a failing round can be run again.
private struct XorShift {
    var state: UInt64
    init(seed: UInt64) { state = seed | 1 }
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
