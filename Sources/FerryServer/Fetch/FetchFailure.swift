import CCurl
import FerryProtocol

/// Why a fetch failed (an HTTP status, even 500, is a result, not a failure). Each case maps to one protocol error
/// code; libcurl's code and message travel in `details`.
///
/// ```swift
/// request.fail(FetchFailure.timeout("operation timed out after 2000 ms").wireError)
/// ```
enum FetchFailure: Error, Equatable {
    /// A bad URL, scheme, method or header: `invalid_argument`.
    case invalidArgument(String)
    /// DNS, connect, TLS, reset, a truncated response: `unavailable`.
    case unavailable(curlCode: Int, message: String)
    /// libcurl's own timeout: `deadline_exceeded`.
    case timeout(String)
    /// The body passed `max_bytes`: `resource_exhausted` (nothing is cached).
    case tooLarge(limit: Int)
    /// A redirect where the request said `redirect: "error"`, or too many of them: `failed_precondition`.
    case redirect(String)
    case internalError(String)

    static func from(_ code: CURLcode, _ message: String, exceeded: Bool, maxBytes: Int) -> FetchFailure {
        if exceeded || code == CURLE_FILESIZE_EXCEEDED { return .tooLarge(limit: maxBytes) }
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timeout(message)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: return .invalidArgument(message)
        default: return .unavailable(curlCode: Int(code.rawValue), message: message)
        }
    }

    var wireError: WireError {
        switch self {
        case .invalidArgument(let m): return WireError(.invalidArgument, m)
        case .unavailable(let code, let m):
            return WireError(.unavailable, m, details: ["curl_code": .int(Int64(code)), "curl_message": .string(m)])
        case .timeout(let m): return WireError(.deadlineExceeded, m)
        case .tooLarge(let limit):
            return WireError(.resourceExhausted, "the response body is larger than max_bytes (\(limit))", details: ["max_bytes": .int(Int64(limit))])
        case .redirect(let m): return WireError(.failedPrecondition, m)
        case .internalError(let m): return WireError(.internal, m)
        }
    }
}
