import FerryHTTPCache

/// A part of a response to keep once its body is complete (an origin's 206 for a client's range), or what an
/// interrupted download got: the part and where it is stored.
struct PartPlan {
    let part: StoredPart
    let key: HTTPCacheKey
}

/// Keeps parts of responses and combines them (RFC 9111 §3.4): a URL has one stored part; a new part that touches
/// or overlaps it under the same strong validator is joined with it into one (`mergeParts` decides), and a part
/// that grows to the whole body becomes the stored response, served like any other. Loop thread only.
///
/// ```swift
/// let keeper = PartKeeper(responses: responses, spool: config.spool, stats: stats)
/// keeper.keep(StoredPart(whole: response, range: 4..<10, total: 10), body: spool, key: key)
/// ```
final class PartKeeper {
    private let responses: ResponseStore
    private let spool: BodySpool.Config
    /// Parts are joined by copying both into a new spool (in the kernel, on the loop thread): up to this many bytes.
    /// Larger ones are not joined; the one kept is the one `mergeParts` prefers when parts cannot combine.
    let maxCombined: Int
    private let stats: FetchStats

    init(responses: ResponseStore, spool: BodySpool.Config, stats: FetchStats, maxCombined: Int = 64 << 20) {
        self.responses = responses
        self.spool = spool
        self.stats = stats
        self.maxCombined = maxCombined
    }

    /// Keeps `body` (complete, or the prefix an interrupted download got; `part.range.count` bytes) as the URL's
    /// part, combined with the part stored before when they share a validator.
    func keep(_ part: StoredPart, body: BodySpool, key: HTTPCacheKey) {
        // What an interrupted download got is kept at once, without reading the stored part first: it may be the
        // daemon's stop that interrupted it, when only work already queued reaches the disk. (A part from 0 stored
        // before was taken into this download, if it was of the same response.)
        guard body.state == .complete else { return responses.storePart(part, body: body, key: key) }
        responses.partial(key: key) { [self] found in
            guard let found, let size = found.body.knownSize, let stored = StoredPart(record: found.response, bodySize: size) else {
                return responses.storePart(part, body: body, key: key, replacing: found)
            }
            switch mergeParts(stored: stored, new: part) {
            case .replace:
                responses.storePart(part, body: body, key: key, replacing: found)
            case .refresh:
                refresh(found, stored, with: part)
            case .combine(let range):
                guard range.count <= maxCombined, let joined = join(stored, found.body, part, body) else {
                    // Too large to copy now: keep the one a plain GET can resume from.
                    if stored.range.lowerBound == 0 && part.range.lowerBound != 0 { return refresh(found, stored, with: part) }
                    return responses.storePart(part, body: body, key: key, replacing: found)
                }
                stats.partsCombined += 1
                guard range == 0..<part.total else {
                    return responses.storePart(StoredPart(whole: part.whole, range: range, total: part.total), body: joined,
                                               key: key, replacing: found)
                }
                // The whole body: the stored response, and the part goes.
                responses.store(part.whole, body: joined, key: key)
                responses.dropPartial(found)
            }
        }
    }

    /// The stored part stays, with the new part's header fields and times (the same representation: the same
    /// validator).
    private func refresh(_ found: ResponseStore.Found, _ stored: StoredPart, with part: StoredPart) {
        var updated = found
        updated.response = StoredPart(whole: part.whole, range: stored.range, total: stored.total).record
        responses.update(updated)
    }

    /// One spool holding both parts' bytes (they touch or overlap), complete; nil when a copy failed.
    private func join(_ stored: StoredPart, _ storedBody: FetchBody, _ new: StoredPart, _ newBody: BodySpool) -> BodySpool? {
        let out = BodySpool(config: spool)
        let storedFirst = stored.range.lowerBound <= new.range.lowerBound
        let (a, b) = storedFirst ? (stored.range, new.range) : (new.range, stored.range)
        let sources: (Source?, Source?) = storedFirst ? (Source(storedBody), Source(newBody)) : (Source(newBody), Source(storedBody))
        guard let first = sources.0, let second = sources.1, first.copy(into: out, from: 0, count: a.count) == nil else { return nil }
        // The second part's bytes past the end of the first (none when it lies inside: `mergeParts` says refresh).
        let skip = a.upperBound - b.lowerBound
        if b.upperBound > a.upperBound, second.copy(into: out, from: skip, count: b.upperBound - a.upperBound) != nil { return nil }
        out.finish(.success(()))
        return out
    }

    /// Where a part's bytes are: in memory, or in a file (the store's, or a spool's).
    private enum Source {
        case bytes(ArraySlice<UInt8>)
        case file(String)

        init?(_ body: FetchBody) {
            switch body {
            case .bytes(let b): self = .bytes(b)
            case .stored(let blob): self = .file(blob.filePath)
            case .spool(let s): self.init(s)
            case .storedRange: return nil
            }
        }

        init?(_ spool: BodySpool) {
            if let bytes = spool.completeInMemory { self = .bytes(bytes) } else if let path = spool.path { self = .file(path) } else { return nil }
        }

        func copy(into out: BodySpool, from offset: Int, count: Int) -> FetchFailure? {
            switch self {
            case .bytes(let b):
                let start = b.startIndex + offset
                return out.prefill(bytes: b[start..<(start + count)])
            case .file(let path):
                return out.prefill(from: path, offset: offset, count: count)
            }
        }
    }
}
