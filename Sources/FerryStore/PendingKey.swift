import FerryCache

/// A key of the disk worker's table of journaled sets not yet in the index (`StoreEngine.pending`), compared by
/// its image (`KeyImage`) where it has one.
///
/// Why: each journaled set is looked up in that table as the worker takes it, and a `Dictionary` compares the keys
/// of every occupied bucket on the way. A stored `CacheKey` over 15 bytes is a String on the heap, so each
/// comparison reached (and retained) a line of its own; under 50 connections of sets that lookup was 5.6 % of the
/// daemon's CPU, on the core the loop shares (perf, BENCHMARKS.md, issue 12). The image is made from the incoming
/// key, whose bytes the loop has just written.
///
/// ```swift
/// var pending: [PendingKey: CacheEntry] = [:]
/// pending[PendingKey(key)] = entry
/// pending[PendingKey(CacheKey(trusted: "default", key.key))]   // the same entry
/// ```
struct PendingKey: Hashable {
    let key: CacheKey
    let image: KeyImage

    init(_ key: CacheKey) {
        self.key = key
        image = key.image
    }

    static func == (a: PendingKey, b: PendingKey) -> Bool {
        KeyImage.decide(stored: a.image, probe: b.image) ?? (a.key == b.key)
    }

    func hash(into h: inout Hasher) { key.hash(into: &h) }
}
