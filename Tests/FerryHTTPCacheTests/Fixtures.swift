import FerryProtocol
@testable import FerryHTTPCache

/// A manual clock: tests move time explicitly; nothing reads the system clock.
struct TestClock {
    var now: Int64
    mutating func advance(_ seconds: Int64) { now += seconds }
}

enum Fixture {
    /// Tue, 14 Nov 2023 22:13:20 GMT.
    static let t0: Int64 = 1_700_000_000
    static let url = "http://example.test/r"

    static func date(_ t: Int64) -> String { HTTPDate.format(t) }

    /// A response received at `t0` for a request sent at `t0 - delay`, stored through the module's own
    /// storing path (headers filtered, Date added when missing, vary key computed from `request`).
    static func stored(
        _ headers: HTTPFields, status: Int = 200, at t: Int64 = t0, delay: Int64 = 0,
        request: CacheRequest = CacheRequest(url: url)
    ) -> StoredResponse {
        StoredResponse(storing: status, headers: headers, for: request, requestTime: t - delay, responseTime: t)
    }

    static func request(_ headers: HTTPFields = [:], mode: CacheMode = .default, method: String = "GET") -> CacheRequest {
        CacheRequest(method: method, url: url, headers: headers, mode: mode)
    }
}
