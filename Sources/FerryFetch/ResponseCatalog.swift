import FerryHTTPCache
import FerryStore

/// What the shared HTTP cache holds for one URL, as a person inspecting it is told (`ferry http ls`, `show`).
/// Partitions (private and credentialed responses) are counted, never shown.
public struct CachedURL: Sendable, Equatable {
    /// The normalised URL the responses are stored under.
    public var url: String
    /// Bytes stored for it: records and bodies, of every variant and partition.
    public var bytes: Int
    /// The shared responses: one, or one per stored variant when the URL's responses carry `Vary`; empty when only
    /// partitions hold it.
    public var responses: [CachedResponse]
    /// The shared responses' `Vary`, when they have one.
    public var vary: String?
    /// Credential partitions holding a response for it (by count only).
    public var partitions: Int
    /// Whether a partial body (an interrupted download, a 206) is kept for it.
    public var partial: Bool
}

/// One stored response, with its freshness as of the moment it was looked at (RFC 9111 §4.2).
public struct CachedResponse: Sendable, Equatable {
    public var status: Int
    /// Its header fields as a client is served them (`TargetedCacheControl.clientView`).
    public var headers: HTTPFields
    /// When it was received (Unix seconds).
    public var storedAt: Int64
    /// `current_age`, seconds.
    public var age: Int64
    /// The freshness lifetime, seconds.
    public var lifetime: Int64
    public var fresh: Bool { age < lifetime }
    public var bodySize: Int
    /// Its secondary key (the request header values its `Vary` names), for a variant.
    public var variantKey: String?
}

/// A page of `ResponseCatalog.list`: the URLs in byte order, and where the next page starts.
public struct CachedURLPage: Sendable, Equatable {
    public var urls: [CachedURL]
    /// The last URL of this page (in the clear: any string is a cursor, "the URLs after this one in byte order");
    /// nil when no URL follows.
    public var cursor: String?
}

/// The shared HTTP cache as an operator sees it, over `ResponseStorage`'s keys (`ResponseStore`'s layout: a URL's
/// keys all start with `"GET " + url` followed by the end, NUL or a space, and no other URL's do — a normalised URL
/// has neither — so they sort together). Reads are peeks: looking changes no recency and no hit counter.
///
/// ```swift
/// catalog.list(prefix: "https://api.test/", after: nil, limit: 100, now: nowSeconds) { page in … }  // page.cursor: next `after`
/// catalog.show(url: "https://api.test/q", now: nowSeconds) { cached in … }     // nil: nothing stored
/// catalog.purge(url: "https://api.test/q") { removed in … }                  // storage keys removed
/// ```
public final class ResponseCatalog {
    private let storage: ResponseStorage
    /// Keys read from the storage per listing step.
    static let pageKeys = 1000

    public init(storage: ResponseStorage) { self.storage = storage }

    /// The URL a storage key belongs to ("GET url", "GET url\0…", "GET url (partition …)…").
    static func url(ofKey key: String) -> Substring? {
        guard key.hasPrefix("GET ") else { return nil }
        let rest = key.dropFirst(4)
        return rest.prefix { $0 != "\u{0}" && $0 != " " }
    }

    // MARK: list

    /// Up to `limit` URLs whose normalised form starts with `prefix`, after the URL `after` (a page's `cursor`).
    /// `now`: Unix seconds.
    public func list(prefix: String, after: String?, limit: Int, now: Int64,
                     _ done: @escaping (Result<CachedURLPage, StoreError>) -> Void) {
        var groups: [(url: String, keys: [(key: String, size: Int)])] = []
        func step(_ after: String?) {
            storage.list(prefix: "GET " + prefix, after: after, limit: ResponseCatalog.pageKeys) { [self] result in
                guard case .success(let page) = result else { return done(result.map { _ in CachedURLPage(urls: [], cursor: nil) }) }
                for (key, size) in page.keys {
                    guard let url = ResponseCatalog.url(ofKey: key) else { continue }
                    if groups.last?.url == String(url) { groups[groups.count - 1].keys.append((key, size)) } else { groups.append((String(url), [(key, size)])) }
                }
                // The last group may go on in the next page: read on until a URL past the `limit`th begins (then
                // the first `limit` are whole) or the keys end.
                if page.more, groups.count <= limit, let last = page.keys.last?.key { return step(last) }
                let shown = Array(groups.prefix(limit))
                let cursor = groups.count > limit ? shown.last?.url : nil
                describe(shown, now: now) { urls in done(.success(CachedURLPage(urls: urls, cursor: cursor))) }
            }
        }
        // Past every key of the URL `after`: its own keys continue it with NUL or " (partition", and every other
        // URL's with a character above the space.
        step(after.map { "GET " + $0 + " (\u{10FFFF}" })
    }

    /// Each group's summary: its shared response (or variants), partitions and bytes, from its keys and a peek of
    /// its shared record.
    private func describe(_ groups: [(url: String, keys: [(key: String, size: Int)])], now: Int64,
                          _ done: @escaping ([CachedURL]) -> Void) {
        ResponseCatalog.inOrder(groups, { group, give in self.summarize(url: group.url, keys: group.keys, now: now) { give($0) } }, done)
    }

    private func summarize(url: String, keys: [(key: String, size: Int)], now: Int64, _ done: @escaping (CachedURL) -> Void) {
        let primary = "GET " + url
        let partitionHead = primary + " (partition "
        var cached = CachedURL(url: url, bytes: keys.reduce(0) { $0 + $1.size }, responses: [], vary: nil,
                               partitions: keys.filter { $0.key.hasPrefix(partitionHead) && !$0.key.contains("\u{0}") }.count,
                               partial: keys.contains { $0.key == ResponseStore.partialKey(primary) })
        storage.peek(primary) { [self] value in
            switch value.flatMap(StoredRecord.decode) {
            case .response(let response, _)?:
                cached.responses = [CachedResponse(response, now: now)]
                done(cached)
            case .varyMarker(let vary, let generation)?:
                cached.vary = vary
                let head = primary + "\u{0}" + String(generation, radix: 16) + "\u{0}"
                let variants = keys.map(\.key).filter { $0.hasPrefix(head) && !$0.dropFirst(head.count).contains("\u{0}") }
                peekResponses(variants) { responses in
                    cached.responses = responses.map { CachedResponse($0, now: now) }
                    done(cached)
                }
            case nil:
                done(cached)
            }
        }
    }

    private func peekResponses(_ keys: [String], _ done: @escaping ([StoredResponse]) -> Void) {
        ResponseCatalog.inOrder(keys, { key, give in
            self.storage.peek(key) { value in
                guard case .response(let response, _)? = value.flatMap(StoredRecord.decode) else { return give(nil) }
                give(response)
            }
        }, done)
    }

    /// Each item through an asynchronous `step`, one after the other, the results in order (a nil is left out).
    static func inOrder<T, R>(_ items: [T], _ step: @escaping (T, @escaping (R?) -> Void) -> Void, _ done: @escaping ([R]) -> Void) {
        var out: [R] = []
        func next(_ k: Int) {
            guard k < items.count else { return done(out) }
            step(items[k]) { result in
                if let result { out.append(result) }
                next(k + 1)
            }
        }
        next(0)
    }

    // MARK: show

    /// What is stored for one URL (normalised by the caller), or nil when nothing is.
    public func show(url: String, now: Int64, _ done: @escaping (Result<CachedURL?, StoreError>) -> Void) {
        keys(of: url) { [self] result in
            guard case .success(let keys) = result else { return done(result.map { _ in nil }) }
            guard !keys.isEmpty else { return done(.success(nil)) }
            summarize(url: url, keys: keys, now: now) { done(.success($0)) }
        }
    }

    /// Every storage key of one URL: its record, what hangs under it (variants, bodies, its partial), its partitions.
    private func keys(of url: String, _ done: @escaping (Result<[(key: String, size: Int)], StoreError>) -> Void) {
        let primary = "GET " + url
        var found: [(key: String, size: Int)] = []
        func collect(_ prefixes: ArraySlice<String>, after: String?) {
            guard let prefix = prefixes.first else { return done(.success(found)) }
            // The URL's own key sorts before every longer key: one row says whether it exists.
            let own = prefix == primary
            storage.list(prefix: prefix, after: after, limit: own ? 1 : ResponseCatalog.pageKeys) { result in
                guard case .success(let page) = result else { return done(result.map { _ in [] }) }
                found += own ? page.keys.filter { $0.key == primary } : page.keys
                if page.more, !own, let last = page.keys.last?.key { return collect(prefixes, after: last) }
                collect(prefixes.dropFirst(), after: nil)
            }
        }
        collect([primary, primary + "\u{0}", primary + " (partition "], after: nil)
    }

    // MARK: purge

    /// Removes everything stored for one URL (normalised by the caller): every variant, body, partial and
    /// partition. `done`: the storage keys removed.
    public func purge(url: String, _ done: @escaping (Result<Int, StoreError>) -> Void) {
        keys(of: url) { [self] result in
            done(result.map { keys in
                for (key, _) in keys { storage.delete(key) }
                return keys.count
            })
        }
    }

    /// Removes everything stored for every URL whose normalised form starts with `prefix`. `done`: the URLs
    /// removed.
    public func purge(prefix: String, _ done: @escaping (Result<Int, StoreError>) -> Void) {
        var urls = 0
        var lastURL: Substring?
        func step(_ after: String?) {
            storage.list(prefix: "GET " + prefix, after: after, limit: ResponseCatalog.pageKeys) { [self] result in
                guard case .success(let page) = result else { return done(result.map { _ in urls }) }
                for (key, _) in page.keys {
                    if let url = ResponseCatalog.url(ofKey: key), url != lastURL {
                        urls += 1
                        lastURL = url
                    }
                    storage.delete(key)
                }
                if page.more, let last = page.keys.last?.key { return step(last) }
                done(.success(urls))
            }
        }
        step(nil)
    }
}

extension CachedResponse {
    init(_ response: StoredResponse, now: Int64) {
        self.init(status: response.status, headers: TargetedCacheControl.clientView(response.headers),
                  storedAt: response.responseTime, age: currentAge(stored: response, now: now),
                  lifetime: freshnessLifetime(response: response), bodySize: response.bodySize,
                  variantKey: response.varyKey.flatMap { $0.isEmpty ? nil : $0 })
    }
}
