#if canImport(Glibc)
import Glibc
#endif

/// A one-line progress bar on stderr for `ferry fetch`, shown only once a download is large (1 MiB) or slow
/// (half a second), redrawn at most ten times a second, and erased at the end.
///
/// ```swift
/// var bar = ProgressBar()
/// bar.update(received: 1_048_576, total: 10_485_760)   // [####                ] 10%  1.0 MB / 10.0 MB
/// bar.finish()
/// ```
struct ProgressBar {
    private let startedMs = ProgressBar.nowMs()
    private var lastDrawMs: Int64 = 0
    private var shown = false

    mutating func update(received: Int, total: Int?) {
        let now = ProgressBar.nowMs()
        guard received >= 1 << 20 || now - startedMs >= 500, now - lastDrawMs >= 100 else { return }
        lastDrawMs = now
        shown = true
        writeStderrRaw("\r" + ProgressBar.line(received: received, total: total, elapsedMs: now - startedMs) + "\u{1B}[K")
    }

    mutating func finish() {
        if shown { writeStderrRaw("\r\u{1B}[K") }
        shown = false
    }

    /// The text of the bar (without cursor control), for a given state.
    static func line(received: Int, total: Int?, elapsedMs: Int64) -> String {
        let rate = elapsedMs > 0 ? Int64(Double(received) * 1000 / Double(elapsedMs)) : 0
        guard let total, total > 0 else { return "\(humanBytes(Int64(received)))  \(humanBytes(rate))/s" }
        let fraction = min(1, Double(received) / Double(total))
        let filled = Int(fraction * 20)
        return "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: 20 - filled) + "] "
            + "\(Int(fraction * 100))%  \(humanBytes(Int64(received))) / \(humanBytes(Int64(total)))  \(humanBytes(rate))/s"
    }

    private static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
