/// `ferry fetch --retry N`, as curl's: a transient problem — a timeout, or an HTTP 408, 429, 500, 502, 503 or 504 —
/// is tried again up to N times, after 1 s, then 2, 4, … up to 10 minutes (`--retry-delay S`: always S), or after
/// what the origin's `Retry-After` asks (seconds); `--retry-max-time S` stops retrying once S have passed since the
/// first try; `--retry-connrefused` adds a refused connection, `--retry-all-errors` every failure. A try whose body
/// already reached stdout is not repeated (the bytes cannot be taken back); one writing `-o FILE` starts the file
/// again.
///
/// ```swift
/// let policy = RetryPolicy(retries: 3)
/// policy.decide(.status(503, retryAfter: nil), retriesMade: 0, elapsed: .zero)   // .retry(after: .seconds(1))
/// policy.decide(.status(404, retryAfter: nil), retriesMade: 0, elapsed: .zero)   // .giveUp
/// ```
struct RetryPolicy: Equatable {
    var retries = 0
    /// `--retry-delay`: a fixed wait; nil: curl's backoff.
    var delay: Duration?
    /// `--retry-max-time`: no retry starts after this long since the first try.
    var maxTime: Duration?
    var allErrors = false
    var connectionRefused = false

    /// What went wrong with a try.
    enum Problem: Equatable {
        /// The origin answered with this status (and perhaps `Retry-After`, seconds).
        case status(Int, retryAfter: Duration?)
        /// The fetch failed, with this exit code.
        case failure(ExitCode)
    }

    enum Decision: Equatable {
        case retry(after: Duration)
        case giveUp
    }

    static let transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]
    /// curl's ceiling on its doubling wait.
    static let longestBackoff: Duration = .seconds(600)

    /// Whether a status is worth a retry (so the try stops at its head rather than write its body).
    func retriesStatus(_ status: Int) -> Bool { retries > 0 && RetryPolicy.transientStatuses.contains(status) }

    func isTransient(_ problem: Problem) -> Bool {
        switch problem {
        case .status(let status, _): return RetryPolicy.transientStatuses.contains(status)
        case .failure(let code):
            if allErrors { return true }
            return code == .timedOut || (connectionRefused && code == .couldNotConnect)
        }
    }

    /// `retriesMade`: retries done so far; `elapsed`: since the first try began.
    func decide(_ problem: Problem, retriesMade: Int, elapsed: Duration) -> Decision {
        guard retriesMade < retries, isTransient(problem) else { return .giveUp }
        var wait = delay ?? min(.seconds(1 << min(retriesMade, 20)), RetryPolicy.longestBackoff)
        if case .status(_, let retryAfter?) = problem { wait = retryAfter }
        if let maxTime, elapsed + wait > maxTime { return .giveUp }
        return .retry(after: wait)
    }

    /// curl's warning before a retry, on stderr.
    static func warning(_ problem: Problem, wait: Duration, left: Int) -> String {
        let what: String
        switch problem {
        case .status: what = "HTTP error"
        case .failure(.timedOut): what = "timeout"
        case .failure: what = "error"
        }
        let ms = wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000
        let seconds = ms % 1000 == 0 ? "\(ms / 1000)" : String(Double(ms) / 1000)
        return "Warning: Problem : \(what). Will retry in \(seconds) seconds. \(left) retr\(left == 1 ? "y" : "ies") left."
    }

    /// The options as given; a bad value is a usage error.
    static func parse(retries: String?, delay: String?, maxTime: String?, allErrors: Bool, connectionRefused: Bool) throws(CommandFailure) -> RetryPolicy {
        func seconds(_ text: String, _ option: String) throws(CommandFailure) -> Duration {
            guard let s = Double(text), s >= 0, s <= 86_400 * 365 else {
                throw CommandFailure(code: .usage, message: "\(option) takes seconds (e.g. 2 or 0.5), not \"\(text)\"")
            }
            return .milliseconds(Int64(s * 1000))
        }
        var policy = RetryPolicy(allErrors: allErrors, connectionRefused: connectionRefused)
        if let retries {
            guard let n = Int(retries), n >= 0, n <= 1000 else { throw CommandFailure(code: .usage, message: "--retry takes a count from 0 to 1000, not \"\(retries)\"") }
            policy.retries = n
        }
        // 0, as in curl: the default backoff.
        if let delay { policy.delay = try seconds(delay, "--retry-delay") }
        if policy.delay == .zero { policy.delay = nil }
        if let maxTime { policy.maxTime = try seconds(maxTime, "--retry-max-time") }
        if policy.maxTime == .zero { policy.maxTime = nil }
        return policy
    }
}
