import FerryClient

/// `ferry fetch`'s exit code for a failed request, as curl's for the same failure, so that scripts written for curl
/// keep working: 6 the host did not resolve, 7 no connection, 28 a timeout, 35 the TLS handshake failed, 60 the
/// peer's certificate was refused, 47 too many redirects, 63 the body was larger than allowed. The daemon names
/// libcurl's code in `details.curl_code` (and its message, which names the host and port) for what libcurl
/// reported; the rest comes from the error's code. Anything else is 1.
///
/// ```swift
/// CurlExit.code(for: FerryError(.unavailable, "Could not resolve host: nosuch.invalid", details: ["curl_code": 6]))  // .couldNotResolve
/// ```
enum CurlExit {
    static func code(for error: FerryError) -> ExitCode {
        if error.raisedBy == .connection { return .noDaemon }
        switch error.details?["curl_code"]?.intValue {
        case 6?: return .couldNotResolve
        case 7?: return .couldNotConnect
        case 28?: return .timedOut
        case 35?: return .tlsConnect
        case 47?: return .tooManyRedirects
        case 51?, 58?, 59?, 60?, 77?, 83?, 90?, 91?: return .tlsVerify
        case 63?: return .fileTooLarge
        default: break
        }
        switch error.code {
        case .deadlineExceeded: return .timedOut
        case .resourceExhausted where error.details?["max_bytes"] != nil: return .fileTooLarge
        case .failedPrecondition where error.message.contains("redirects (max_redirects)"): return .tooManyRedirects
        default: return .operationFailed
        }
    }

    /// curl's words for the failures it shares with ferry fetch, naming the host and port as curl's do
    /// (`(6) Could not resolve host: example.invalid`, `(7) Failed to connect to 127.0.0.1 port 1: …`).
    static func message(_ error: FerryError, url: String) -> String {
        let code = CurlExit.code(for: error)
        guard code != .operationFailed, code != .noDaemon else { return "\(error.codeName): \(error.message)" }
        let u = URLParts(url)
        switch code {
        case .couldNotResolve: return "(6) Could not resolve host: \(u.host)"
        case .couldNotConnect: return "(7) Failed to connect to \(u.host) port \(u.port): \(error.message)"
        default: return "(\(code.rawValue)) \(error.message) (\(u.host) port \(u.port))"
        }
    }
}
