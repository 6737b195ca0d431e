import Foundation
@testable import FerryFetch
import FerryHTTPCache
import FerryStore

/// An origin the test answers by hand: every exchange the engine starts is recorded, and stays open until the test
/// responds, fails it, or the engine cancels it.
final class FakeOrigin: OriginTransport {
    final class Exchange: OriginExchange {
        let request: OriginRequest
        /// Dropped when the exchange ends, as the transport drops its transfer.
        private(set) var body: BodySpool?
        private var events: OriginEvents?
        private(set) var cancelled = false
        private let clock: TestClock

        init(_ request: OriginRequest, clock: TestClock, body: BodySpool, events: OriginEvents) {
            self.request = request
            self.clock = clock
            self.body = body
            self.events = events
        }

        var isOpen: Bool { events != nil && !cancelled }
        var progress: (Int, Int?) -> Void { events?.progress ?? { _, _ in } }

        func header(_ name: String) -> String? { HTTPFields(request.headers).first(name) }

        /// The whole response at once: its body, then its head, then its end (as libcurl reports one that came in
        /// one read).
        func respond(_ status: Int, _ headers: [(String, String)] = [], body: String = "") {
            guard isOpen else { return }
            _ = self.body?.append(Array(body.utf8))
            self.body?.finish(.success(()))  // as `Transfer.finish` does: the body is whole when the head is announced
            sendHead(status, headers)
            end()
        }

        /// The head only: the body follows with `send`, then `end` (a body that streams).
        func sendHead(_ status: Int, _ headers: [(String, String)] = []) {
            let now = clock.nowMs / 1000
            events?.head(OriginHead(status: status, headers: headers, requestTime: now, responseTime: now))
        }

        func send(_ bytes: [UInt8]) {
            _ = body?.append(bytes)
            body?.announce(nowMs: Int64.max / 2)
        }

        func end() {
            let e = events
            events = nil
            body = nil
            e?.done(.success(OriginTiming()))
        }

        func fail(_ failure: FetchFailure) {
            let e = events
            events = nil
            body = nil
            e?.done(.failure(failure))
        }

        func cancel() {
            cancelled = true
            body = nil
        }
    }

    let clock: TestClock
    private(set) var exchanges: [Exchange] = []
    var refuseToStart: FetchFailure?

    init(clock: TestClock) { self.clock = clock }

    func start(_ request: OriginRequest, body: BodySpool, events: OriginEvents) throws(FetchFailure) -> OriginExchange {
        if let refuseToStart { throw refuseToStart }
        let exchange = Exchange(request, clock: clock, body: body, events: events)
        exchanges.append(exchange)
        return exchange
    }

    var activeTransfers: Int { exchanges.filter(\.isOpen).count }
    var open: [Exchange] { exchanges.filter(\.isOpen) }

    func close() {}
}

/// Wall-clock time the test moves by hand.
final class TestClock {
    var nowMs: Int64 = 1_800_000_000_000
    func advance(seconds: Int64) { nowMs += seconds * 1000 }
}

/// `ResponseStorage` in a dictionary, answering at once (the daemon's memory tier does the same for what it holds),
/// counting what the engine asks of it.
final class MemoryStorage: ResponseStorage {
    private(set) var records: [String: [UInt8]] = [:]
    private(set) var puts = 0
    private(set) var deletes = 0

    /// When set, reads answer later, at `answerReads`, with what was stored when they were asked (as the disk
    /// worker's reads do: a put settled meanwhile is not in them).
    var deferReads = false
    private var waitingReads: [() -> Void] = []

    func get(_ key: String, _ done: @escaping ([UInt8]?) -> Void) {
        guard deferReads else { return done(records[key]) }
        let value = records[key]
        waitingReads.append { done(value) }
    }

    func answerReads() {
        while !waitingReads.isEmpty { waitingReads.removeFirst()() }
    }

    func put(_ key: String, _ value: [UInt8]) {
        puts += 1
        records[key] = value
    }

    func delete(_ key: String) {
        deletes += 1
        records[key] = nil
    }

    /// Bodies stored apart are kept as bytes here (read whole from their file, which then goes).
    func putBody(_ key: String, file: SpooledFile, _ done: @escaping (Bool) -> Void) {
        defer { unlink(file.path) }
        guard let data = FileManager.default.contents(atPath: file.path), data.count == file.size else { return done(false) }
        puts += 1
        records[key] = [UInt8](data)
        done(true)
    }

    func getBody(_ key: String, _ done: @escaping (FetchBody?) -> Void) { done(records[key].map { .bytes($0[...]) }) }

    private(set) var peeks = 0
    func peek(_ key: String, _ done: @escaping ([UInt8]?) -> Void) {
        peeks += 1
        done(records[key])
    }

    func list(prefix: String, after: String?, limit: Int, _ done: @escaping (Result<StoredKeys, StoreError>) -> Void) {
        let keys = records.keys.filter { key in
            key.utf8.starts(with: prefix.utf8) && after.map { Array($0.utf8).lexicographicallyPrecedes(Array(key.utf8)) } ?? true
        }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        done(.success(StoredKeys(keys: keys.prefix(limit).map { ($0, records[$0]!.count) }, more: keys.count > limit)))
    }
}

/// An engine on a fake origin, a dictionary and a test clock, and a way to run fetches and read their outcome.
final class EngineHarness {
    let clock = TestClock()
    let origin: FakeOrigin
    let storage = MemoryStorage()
    let engine: FetchEngine

    /// `spool`: where bodies go as they arrive (in memory unless a test gives a directory).
    convenience init(spool: BodySpool.Config = .init(directory: nil)) {
        var config = FetchEngine.Config()
        config.spool = spool
        self.init(config: config)
    }

    init(config: FetchEngine.Config) {
        origin = FakeOrigin(clock: clock)
        let clock = self.clock
        engine = FetchEngine(transport: origin, responses: ResponseStore(storage: storage), config: config, now: { clock.nowMs })
    }

    final class Pending {
        var result: Result<FetchOutcome, FetchFailure>?
        var job: FetchJob?
        var outcome: FetchOutcome? { if case .success(let o)? = result { return o } else { return nil } }
        var failure: FetchFailure? { if case .failure(let f)? = result { return f } else { return nil } }
        /// The body, when it is in memory (every body of these tests is, unless it streams).
        var bytes: [UInt8]? { outcome?.body.bytesInMemory.map(Array.init) }
        var text: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
    }

    @discardableResult
    func fetch(_ url: String, _ configure: (inout FetchSpec) -> Void = { _ in }) -> Pending {
        var spec = FetchSpec(url: url)
        configure(&spec)
        let pending = Pending()
        let job = FetchJob(engine: engine, spec: spec) { pending.result = $0 }
        pending.job = job
        job.start()
        return pending
    }
}
