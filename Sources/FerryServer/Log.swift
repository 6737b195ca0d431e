#if canImport(Glibc)
import Glibc
#endif

/// Log levels, most verbose first.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, warn, error

    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "warn", "warning": self = .warn
        case "error": self = .error
        default: return nil
        }
    }

    public var name: String { ["debug", "info", "warn", "error"][rawValue] }
    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// One line per event on stderr: `2026-11-29T16:38:10.123Z info listening path=/tmp/ferry-0/ferryd.sock`.
///
/// Each line goes out in a single `write(2)`, so lines from different threads never interleave. (Glibc's `stderr`
/// global is not usable from Swift 6 code, and buffering would lose the last lines on a crash.)
public struct Logger: Sendable {
    public var level: LogLevel

    public init(level: LogLevel = .info) { self.level = level }

    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func warn(_ message: @autoclosure () -> String) { log(.warn, message()) }
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }

    public func log(_ l: LogLevel, _ message: @autoclosure () -> String) {
        guard l >= level else { return }
        var line = Logger.timestamp() + " " + l.name + " " + message() + "\n"
        line.withUTF8 { b in
            var off = 0
            while off < b.count {
                let n = write(2, b.baseAddress! + off, b.count - off)
                if n <= 0 { break }
                off += n
            }
        }
    }

    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = ts.tv_sec
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(ts.tv_nsec / 1_000_000), 3))Z"
    }
}
