import CCurl

/// Why a fetch failed (an HTTP status, even 500, is a result, not a failure). Each case maps to one protocol error
/// code at the operation edge (`FetchFailure.wireError` in FerryServer); libcurl's code and message travel along.
///
/// ```swift
/// job.start()   // … done(.failure(.tooLarge(limit: 1 << 20))): the body passed max_bytes, nothing was stored
/// ```
public enum FetchFailure: Error, Equatable, Sendable {
    /// A bad URL, scheme, method or header: `invalid_argument`.
    case invalidArgument(String)
    /// DNS, connect, TLS, reset, a truncated response: `unavailable`.
    case unavailable(curlCode: Int, message: String)
    /// libcurl's own timeout: `deadline_exceeded`.
    case timeout(String)
    /// The body passed `max_bytes`: `resource_exhausted` (nothing is cached).
    case tooLarge(limit: Int)
    /// The response's header section passed what ferryd accepts (`Transfer.maxHeaderBytes` in all, libcurl's
    /// 100 KiB for one field): `resource_exhausted`.
    case headersTooLarge(limit: Int)
    /// A redirect where the request said `redirect: "error"`, or too many of them: `failed_precondition`.
    case redirect(String)
    /// The body could not be kept on the daemon's disk while it arrived (a full disk): `resource_exhausted`.
    case spoolFailed(String)
    case internalError(String)

    static func from(_ code: CURLcode, _ message: String, exceeded: Bool, maxBytes: Int, headersExceeded: Bool = false) -> FetchFailure {
        if headersExceeded { return .headersTooLarge(limit: Transfer.maxHeaderBytes) }
        if exceeded || code == CURLE_FILESIZE_EXCEEDED { return .tooLarge(limit: maxBytes) }
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timeout(message)
        case CURLE_SEND_FAIL_REWIND:
            return .unavailable(curlCode: Int(code.rawValue), message: """
                the origin closed a reused connection before answering; the request is not sent again on its own \
                (it may have been received): retry it if it is idempotent ("retry": true or an Idempotency-Key header)
                """)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: return .invalidArgument(message)
        default: return .unavailable(curlCode: Int(code.rawValue), message: message)
        }
    }
}
