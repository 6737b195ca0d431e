@testable import FerryFetch
import FerryHTTPCache

/// An origin the test answers by hand: every exchange the engine starts is recorded, and stays open until the test
/// responds, fails it, or the engine cancels it.
final class FakeOrigin: OriginTransport {
    final class Exchange: OriginExchange {
        let request: OriginRequest
        private var done: ((Result<OriginResponse, FetchFailure>) -> Void)?
        let progress: (Int, Int?) -> Void
        private(set) var cancelled = false
        private let clock: TestClock

        init(_ request: OriginRequest, clock: TestClock, progress: @escaping (Int, Int?) -> Void,
             done: @escaping (Result<OriginResponse, FetchFailure>) -> Void) {
            self.request = request
            self.clock = clock
            self.progress = progress
            self.done = done
        }

        var isOpen: Bool { done != nil && !cancelled }

        func header(_ name: String) -> String? { HTTPFields(request.headers).first(name) }

        func respond(_ status: Int, _ headers: [(String, String)] = [], body: String = "") {
            let now = clock.nowMs / 1000
            let d = done
            done = nil
            d?(.success(OriginResponse(status: status, headers: headers, body: Array(body.utf8), requestTime: now, responseTime: now)))
        }

        func fail(_ failure: FetchFailure) {
            let d = done
            done = nil
            d?(.failure(failure))
        }

        func cancel() { cancelled = true }
    }

    let clock: TestClock
    private(set) var exchanges: [Exchange] = []
    var refuseToStart: FetchFailure?

    init(clock: TestClock) { self.clock = clock }

    func start(_ request: OriginRequest, progress: @escaping (Int, Int?) -> Void,
               done: @escaping (Result<OriginResponse, FetchFailure>) -> Void) throws(FetchFailure) -> OriginExchange {
        if let refuseToStart { throw refuseToStart }
        let exchange = Exchange(request, clock: clock, progress: progress, done: done)
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

    func get(_ key: String, _ done: @escaping ([UInt8]?) -> Void) { done(records[key]) }

    func put(_ key: String, _ value: [UInt8]) {
        puts += 1
        records[key] = value
    }

    func delete(_ key: String) {
        deletes += 1
        records[key] = nil
    }
}

/// An engine on a fake origin, a dictionary and a test clock, and a way to run fetches and read their outcome.
final class EngineHarness {
    let clock = TestClock()
    let origin: FakeOrigin
    let storage = MemoryStorage()
    let engine: FetchEngine

    init() {
        origin = FakeOrigin(clock: clock)
        let clock = self.clock
        engine = FetchEngine(transport: origin, responses: ResponseStore(storage: storage), now: { clock.nowMs })
    }

    final class Pending {
        var result: Result<FetchOutcome, FetchFailure>?
        var job: FetchJob?
        var outcome: FetchOutcome? { if case .success(let o)? = result { return o } else { return nil } }
        var failure: FetchFailure? { if case .failure(let f)? = result { return f } else { return nil } }
        var text: String? { outcome.map { String(decoding: $0.body, as: UTF8.self) } }
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
