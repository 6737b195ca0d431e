#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock time for `created_at` / `expires_at` and HTTP dates (TTLs and freshness are promises in real time, not
/// loop time). Parts that need time take it as an argument or an injected closure (`now: WallClock.nowMs`), so
/// their tests run on a clock of their own.
///
/// ```swift
/// let createdAt = WallClock.nowMs()   // ms since the Unix epoch
/// ```
public enum WallClock {
    public static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
