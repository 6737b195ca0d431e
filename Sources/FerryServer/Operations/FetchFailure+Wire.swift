import FerryFetch
import FerryProtocol

extension FetchFailure {
    /// The protocol error a client gets for this failure; libcurl's code and message travel in `details`.
    ///
    /// ```swift
    /// request.fail(FetchFailure.timeout("operation timed out after 2000 ms").wireError)   // deadline_exceeded
    /// ```
    var wireError: WireError {
        switch self {
        case .invalidArgument(let m): return WireError(.invalidArgument, m)
        case .unavailable(let code, let m):
            return WireError(.unavailable, m, details: ["curl_code": .int(Int64(code)), "curl_message": .string(m)])
        case .timeout(let m): return WireError(.deadlineExceeded, m)
        case .tooLarge(let limit):
            return WireError(.resourceExhausted, "the response body is larger than max_bytes (\(limit))", details: ["max_bytes": .int(Int64(limit))])
        case .headersTooLarge(let limit):
            return WireError(.resourceExhausted, "the origin's response headers are larger than ferryd accepts (\(limit) bytes in all, 100 KiB for one field)",
                             details: ["max_header_bytes": .int(Int64(limit))])
        case .redirect(let m): return WireError(.failedPrecondition, m)
        case .spoolFailed(let m): return WireError(.resourceExhausted, m)
        case .internalError(let m): return WireError(.internal, m)
        }
    }
}
