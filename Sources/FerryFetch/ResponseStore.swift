import FerryHTTPCache

/// The shared HTTP cache's records: stored responses (headers, times, and the body or where it is) in a
/// `ResponseStorage`.
///
/// Layout per primary key (`GET <normalised url>`): a response without `Vary` is stored right there; a response
/// with `Vary` leaves a marker there holding the `Vary` value and a random generation, and the variant itself under
/// `<primary key> NUL <generation> NUL <variant key>`, so several variants of one URL live side by side. Deleting or
/// replacing the marker (an invalidation, a response without `Vary`) makes every variant of the old generation
/// unreachable at once; they age out of the store's LRU. A body that was spooled to a file (larger than the
/// spool's memory part) is stored apart, under `<record key> NUL body NUL <random>`, and its record points at it:
/// a 304 rewrites only the record, a hit streams the body from its file, and a record whose body is gone is a miss.
///
/// ```swift
/// let responses = ResponseStore(storage: CacheStoreResponses(store: store))
/// responses.lookup(request) { found in ... }           // found: Found(response, body, storageKey, bodyKey)?
/// responses.store(stored, body: spool, key: key)        // once the spool is complete
/// ```
public final class ResponseStore {
    let storage: ResponseStorage
    /// Primary keys with a response being written (its body adopted, its Vary marker read first): a lookup of
    /// one waits until it is in, so a request right behind the one that fetched it is a hit, not a second
    /// download.
    private var placing = WorkByKey()

    public init(storage: ResponseStorage) { self.storage = storage }

    struct Found {
        var response: StoredResponse
        /// In memory (a slice of the record) or, when stored apart, the store's file.
        var body: FetchBody
        /// Where it is stored (for updates after a 304).
        var storageKey: String
        /// Where its body is, when stored apart.
        var bodyKey: String?
        /// What `evaluate` needs of `response` alone, made once for its record (`StoredFacts`).
        var facts: StoredFacts

        init(response: StoredResponse, body: FetchBody, storageKey: String, bodyKey: String?, facts: StoredFacts? = nil) {
            self.response = response
            self.body = body
            self.storageKey = storageKey
            self.bodyKey = bodyKey
            self.facts = facts ?? StoredFacts(response)
        }
    }

    /// Records decoded lately, by storage key, with the facts of their response. Why: a hit decoded its record and
    /// parsed its headers again for every request (a third of a fetch hit's instructions, callgrind). The store
    /// hands out the same bytes until the record changes, so a record whose bytes are those remembered (the same
    /// buffer: one comparison) is the one decoded then. Small records only, and few, so what this keeps alive
    /// beside the store stays small.
    private var decoded: [String: (bytes: [UInt8], record: StoredRecord, facts: StoredFacts?)] = [:]
    static let decodedRecords = 128
    static let decodedRecordBytes = 16 * 1024

    /// The stored response for the request's variant, if any: in its credential partition first, then shared.
    func lookup(_ request: CacheRequest, _ done: @escaping (Found?) -> Void) {
        lookup(request, keys: request.lookupKeys[...], done)
    }

    /// The same, with the request's `lookupKeys` already made.
    func lookup(_ request: CacheRequest, keys: [HTTPCacheKey], _ done: @escaping (Found?) -> Void) {
        lookup(request, keys: keys[...], done)
    }

    private func lookup(_ request: CacheRequest, keys: ArraySlice<HTTPCacheKey>, _ done: @escaping (Found?) -> Void) {
        guard let key = keys.first else { return done(nil) }
        lookup(request, primary: key.description) { [self] found in
            if let found { return done(found) }
            lookup(request, keys: keys.dropFirst(), done)
        }
    }

    private func lookup(_ request: CacheRequest, primary: String, _ done: @escaping (Found?) -> Void) {
        if placing.whenDone(primary, { [self] in lookup(request, primary: primary, done) }) { return }
        getWithFacts(primary) { [self] record, facts in
            switch record {
            case .response(let response, let body)?:
                found(response, body, storageKey: primary, facts: facts, done)
            case .varyMarker(let vary, let generation)?:
                guard let variant = variantKey(forVary: vary, request: request.headers) else { return done(nil) }
                let variantKey = ResponseStore.variantStorageKey(primary, generation, variant)
                getWithFacts(variantKey) { [self] record, facts in
                    guard case .response(let response, let body)? = record else { return done(nil) }
                    found(response, body, storageKey: variantKey, facts: facts, done)
                }
            case nil:
                done(nil)
            }
        }
    }

    /// `facts`: those of `response`, when they were kept with its record (else `Found` makes them).
    private func found(_ response: StoredResponse, _ body: StoredRecord.Body, storageKey: String, facts: StoredFacts? = nil,
                       _ done: @escaping (Found?) -> Void) {
        switch body {
        case .inline(let bytes):
            done(Found(response: response, body: .bytes(bytes), storageKey: storageKey, bodyKey: nil, facts: facts))
        case .apart(let bodyKey, let size):
            storage.getBody(bodyKey) { body in
                // Evicted, or not the body the record names: the response is not stored any more.
                guard let body, body.knownSize == size else { return done(nil) }
                done(Found(response: response, body: body, storageKey: storageKey, bodyKey: bodyKey, facts: facts))
            }
        }
    }

    /// Stores a complete response under its primary key (and variant). A body still in memory goes into the
    /// record; a spooled one is handed to the storage first, and the record written once it is stored. Best
    /// effort: a body over what the store keeps, or a full disk, leaves the response uncached. `replacing` is the
    /// body the previous record of this response pointed at, dropped once the new record is in.
    func store(_ response: StoredResponse, body: BodySpool, key: HTTPCacheKey, replacing: String? = nil) {
        var response = response
        response.bodySize = body.length
        let primary = key.description
        beginPlacing(primary)
        if let bytes = body.completeInMemory {
            let record = StoredRecord.encode(response, body: bytes)
            body.share(record[(record.count - bytes.count)...])  // the body's readers and the store: one copy
            place(response, record, primary: primary)
            if let replacing { storage.delete(replacing) }
            return
        }
        let bodyKey = primary + "\u{0}body\u{0}" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let size = body.length
        guard let file = body.takeFile() else { return endPlacing(primary) }
        // The body's job first, then the record: a lookup that finds the record asks for the body after the job,
        // so it finds it; and at a daemon's stop the job and the record both reach the disk (completions of queued
        // work do not run then). A body the store refuses leaves a record that is only a miss, removed here.
        storage.putBody(bodyKey, file: SpooledFile(path: file.path, size: file.size, checksum: file.checksum)) { [self] stored in
            if !stored { dropRecord(naming: bodyKey, primary: primary, vary: response.headers.combined("vary") != nil) }
        }
        place(response, StoredRecord.encode(response, bodyKey: bodyKey, size: size), primary: primary)
        if let replacing { storage.delete(replacing) }
    }

    /// A record whose body was refused goes, if it is still the one naming that body (no Vary: a variant's record
    /// is only unreachable once its body is missing, a miss like any other).
    private func dropRecord(naming bodyKey: String, primary: String, vary: Bool) {
        guard !vary else { return }
        get(primary) { [self] record in
            if case .response(_, .apart(let current, _))? = record, current == bodyKey { storage.delete(primary) }
        }
    }

    /// Writes a response's record, joining the variants already stored under the same Vary (anything else starts
    /// a new generation); then the lookups that waited for it go on.
    private func place(_ response: StoredResponse, _ record: [UInt8], primary: String) {
        guard let vary = response.headers.combined("vary"), !HTTPSyntax.trimmingOWS(vary).isEmpty else {
            put(primary, record)
            return endPlacing(primary)
        }
        get(primary) { [self] existing in
            var generation = UInt64.random(in: 1...UInt64.max)
            if case .varyMarker(let old, let g)? = existing, varyFieldNames(old) == varyFieldNames(vary) {
                generation = g
            } else {
                put(primary, StoredRecord.encodeVaryMarker(vary, generation: generation))
            }
            put(ResponseStore.variantStorageKey(primary, generation, response.varyKey ?? ""), record)
            endPlacing(primary)
        }
    }

    // MARK: Parts (206 answers, downloads that ended early)

    /// Keeps a part of a response (`StoredPart`: a 206's body, or what an interrupted download of a storable 200
    /// got) as the URL's one stored part, replacing `replacing` (the part stored before, from `partial`). A body
    /// still in memory goes into the record; a spooled one is stored apart. Ranges inside it are served from it,
    /// and a part from byte 0 is what the next plain GET, from any process, resumes from (`partial(for:)`).
    func storePart(_ part: StoredPart, body: BodySpool, key: HTTPCacheKey, replacing: Found? = nil) {
        let partialKey = ResponseStore.partialKey(key.description)
        defer { if let old = replacing?.bodyKey { storage.delete(old) } }
        if let bytes = body.completeInMemory {
            return put(partialKey, StoredRecord.encode(part.record, body: bytes))
        }
        guard let file = body.takePartialFile(), file.size == part.range.count else { return }
        let bodyKey = partialKey + "\u{0}" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        // The record first: at a daemon's stop the body's job still runs but its completion does not, and a record
        // whose body is missing is only a miss (`found`).
        put(partialKey, StoredRecord.encode(part.record, bodyKey: bodyKey, size: file.size))
        storage.putBody(bodyKey, file: SpooledFile(path: file.path, size: file.size, checksum: nil)) { _ in }
    }

    /// The partial body kept for this request's URL (in its partition, else shared), if any.
    func partial(for request: CacheRequest, _ done: @escaping (Found?) -> Void) {
        partial(keys: request.lookupKeys[...], done)
    }

    /// The part stored under exactly this key (the keeper combining a new part with it).
    func partial(key: HTTPCacheKey, _ done: @escaping (Found?) -> Void) {
        partial(keys: [key][...], done)
    }

    private func partial(keys: ArraySlice<HTTPCacheKey>, _ done: @escaping (Found?) -> Void) {
        guard let key = keys.first else { return done(nil) }
        let partialKey = ResponseStore.partialKey(key.description)
        get(partialKey) { [self] record in
            guard case .response(let response, let body)? = record else { return partial(keys: keys.dropFirst(), done) }
            found(response, body, storageKey: partialKey) { [self] found in
                if let found { return done(found) }
                partial(keys: keys.dropFirst(), done)
            }
        }
    }

    /// A part was taken into a resumed download (or into the whole it completed): it goes.
    func dropPartial(_ found: Found) {
        storage.delete(found.storageKey)
        if let bodyKey = found.bodyKey { storage.delete(bodyKey) }
    }

    static func partialKey(_ primary: String) -> String { primary + "\u{0}partial" }

    private func beginPlacing(_ primary: String) {
        placing.begin(primary)
        placements += 1
        if recentPlacements.count >= ResponseStore.recentPlacementsLimit { recentPlacements.removeAll(keepingCapacity: true) }
        recentPlacements[primary] = placements
    }

    /// Responses whose storing began since start: a mark a lookup takes, to learn afterwards whether a response for
    /// its keys began to be stored while it looked (`placed(since:anyOf:)`).
    private(set) var placements: UInt64 = 0
    /// The mark of the last storing that began, by primary key: the last `recentPlacementsLimit` keys (forgotten all
    /// at once past that: a lookup then may not learn of one, as before this was kept).
    private var recentPlacements: [String: UInt64] = [:]
    static let recentPlacementsLimit = 4096

    /// Whether a response for any of `primaries` began to be stored after `mark` (a `placements` value): a miss
    /// looked up before then may be stale.
    func placed(since mark: UInt64, anyOf primaries: [String]) -> Bool {
        mark < placements && primaries.contains { (recentPlacements[$0] ?? 0) > mark }
    }

    /// Runs `next` once no response for `primary` is being placed (at once when none is): what was stored is then
    /// in the storage.
    func whenPlaced(_ primary: String, _ next: @escaping () -> Void) {
        if !placing.whenDone(primary, next) { next() }
    }

    private func endPlacing(_ primary: String) {
        for waiter in placing.end(primary) { waiter() }
    }

    /// Replaces a stored response's headers and times (after a 304), keeping its body where it is. A record whose
    /// body is stored apart is rewritten only if it still points at that body (a newer response may have replaced
    /// it, and its old body, meanwhile).
    func update(_ found: Found) {
        switch (found.bodyKey, found.body) {
        case (let bodyKey?, _):
            get(found.storageKey) { [self] record in
                guard case .response(_, .apart(let current, _))? = record, current == bodyKey else { return }
                put(found.storageKey, StoredRecord.encode(found.response, bodyKey: bodyKey, size: found.response.bodySize))
            }
        case (nil, .bytes(let bytes)):
            put(found.storageKey, StoredRecord.encode(found.response, body: bytes))
        default:
            break
        }
    }

    /// Removes what is stored for these URLs (an unsafe method succeeded), shared and in the requester's
    /// partition: the primary record, which makes every variant unreachable, and the body it points at when
    /// stored apart. (Other partitions' copies are not known here; they keep to their own freshness.)
    func invalidate(urls: [String], partition: String? = nil) {
        for url in urls {
            guard let shared = HTTPCacheKey(lookupFor: "GET", url: url) else { continue }
            var keys = [shared]
            if let partition { keys.append(HTTPCacheKey(method: shared.method, url: shared.url, partition: partition)) }
            for key in keys { invalidate(primary: key.description) }
        }
    }

    private func invalidate(primary: String) {
        get(primary) { [self] record in
            if case .response(_, .apart(let bodyKey, _))? = record { storage.delete(bodyKey) }
        }
        storage.delete(primary)
    }

    static func variantStorageKey(_ primary: String, _ generation: UInt64, _ variant: String) -> String {
        primary + "\u{0}" + String(generation, radix: 16) + "\u{0}" + variant
    }

    private func get(_ key: String, _ done: @escaping (StoredRecord?) -> Void) {
        getWithFacts(key) { record, _ in done(record) }
    }

    /// The same, with the facts of a response kept with its record (nil when none were: the caller makes them).
    private func getWithFacts(_ key: String, _ done: @escaping (StoredRecord?, StoredFacts?) -> Void) {
        storage.get(key) { [self] value in
            let decoded = value.flatMap { decode($0, key: key) }
            done(decoded?.record, decoded?.facts)
        }
    }

    /// `StoredRecord.decode`, remembered for small records with their facts (`decoded`).
    private func decode(_ bytes: [UInt8], key: String) -> (record: StoredRecord, facts: StoredFacts?)? {
        if let known = decoded[key], known.bytes == bytes { return (known.record, known.facts) }
        guard let record = StoredRecord.decode(bytes) else { return nil }
        guard bytes.count <= ResponseStore.decodedRecordBytes else { return (record, nil) }
        if decoded.count >= ResponseStore.decodedRecords { decoded.removeAll(keepingCapacity: true) }
        var facts: StoredFacts?
        if case .response(let response, _) = record { facts = StoredFacts(response) }
        decoded[key] = (bytes, record, facts)
        return (record, facts)
    }

    private func put(_ key: String, _ value: [UInt8]) { storage.put(key, value) }
}
