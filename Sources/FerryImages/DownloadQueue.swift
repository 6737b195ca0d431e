/// One download and who waits for it (the loader's actor owns both types below).
final class Download {
    let request: ImageRequest
    let key: String
    var isPrefetch: Bool
    /// Started while nobody had asked for it directly: it counts against the prefetch limit.
    var runsAsPrefetch = false
    var subscribers: [ImageSubscriber: CheckedContinuation<Result<LoadedImage, ImageError>, Never>] = [:]
    var task: Task<Void, Never>?

    init(request: ImageRequest, key: String, isPrefetch: Bool) {
        self.request = request
        self.key = key
        self.isPrefetch = isPrefetch
    }
}

/// Downloads waiting for a slot: direct requests first, prefetches after them; among each, the download of the owner
/// (client) running the fewest goes first, the oldest among equals, and an owner at its share waits.
struct DownloadQueue {
    private var direct: [Download] = []
    private var prefetches: [Download] = []

    var count: Int { direct.count + prefetches.count }

    mutating func append(_ d: Download) {
        if d.isPrefetch { prefetches.append(d) } else { direct.append(d) }
    }

    /// The next download to start: a direct request whenever one may start, else a prefetch when allowed.
    /// `running(owner)` is how many downloads an owner runs now; one running `maxPerOwner` is passed over.
    mutating func next(prefetchAllowed: Bool = true, running: (UInt64) -> Int = { _ in 0 }, maxPerOwner: Int = .max) -> Download? {
        if let i = DownloadQueue.fairest(direct, running, maxPerOwner) { return direct.remove(at: i) }
        if prefetchAllowed, let i = DownloadQueue.fairest(prefetches, running, maxPerOwner) { return prefetches.remove(at: i) }
        return nil
    }

    private static func fairest(_ line: [Download], _ running: (UInt64) -> Int, _ maxPerOwner: Int) -> Int? {
        var best: (index: Int, held: Int)?
        for (i, d) in line.enumerated() {
            let held = running(d.request.owner)
            guard held < maxPerOwner else { continue }
            if best == nil || held < best!.held { best = (i, held) }
            if held == 0 { break }  // nobody is fairer than an owner running none
        }
        return best?.index
    }

    /// A prefetch asked for directly joins the direct line (at its end); one that runs already is left alone.
    mutating func promote(_ d: Download) {
        guard let i = prefetches.firstIndex(where: { $0 === d }) else { return }
        prefetches.remove(at: i)
        direct.append(d)
    }

    /// Drops a download that has not started; false when it was not waiting (it runs).
    mutating func remove(_ d: Download) -> Bool {
        if let i = direct.firstIndex(where: { $0 === d }) {
            direct.remove(at: i)
            return true
        }
        if let i = prefetches.firstIndex(where: { $0 === d }) {
            prefetches.remove(at: i)
            return true
        }
        return false
    }
}
