#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock time for `created_at` / `expires_at` (TTLs are promises in real time, not loop time).
enum WallClock {
    static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
