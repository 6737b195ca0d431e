#if canImport(Glibc)
import Glibc
#endif
import FerryProtocol
import Synchronization

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

/// One line per event: `2026-11-29T16:38:10.123Z info listening path=/tmp/ferry-0/ferryd.sock`, on stderr (which
/// journald takes under systemd) or in a file (`--log-file`).
///
/// Each line goes out in a single `write(2)`, so lines from different threads never interleave. (Glibc's `stderr`
/// global is not usable from Swift 6 code, and buffering would lose the last lines on a crash.) Copies share one
/// `LogSink`, so a reload's new level and a reopened file reach every part at once.
///
/// ```swift
/// let log = Logger(level: .info)
/// log.info("listening path=/tmp/s")
/// log.sink.level = .debug            // live, for every copy (SIGHUP)
/// ```
public struct Logger: Sendable {
    public let sink: LogSink

    public init(level: LogLevel = .info, file: String? = nil, format: LogFormat = .logfmt) {
        sink = LogSink(level: level, path: file, format: format)
    }

    public var level: LogLevel { sink.level }

    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func warn(_ message: @autoclosure () -> String) { log(.warn, message()) }
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }

    public func log(_ l: LogLevel, _ message: @autoclosure () -> String) {
        guard l >= sink.level else { return }
        switch sink.format {
        case .logfmt: sink.write(Logger.timestamp() + " " + l.name + " " + message() + "\n")
        case .json:
            var line = Array("{\"time\":\"\(Logger.timestamp())\",\"level\":\"\(l.name)\",\"msg\":".utf8)
            JSONWriter.writeString(message(), to: &line)
            line += Array("}\n".utf8)
            sink.write(bytes: line)
        }
    }

    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return timestamp(ts)
    }

    /// The same, of the time `ts` (the access log formats the reading it took).
    static func timestamp(_ ts: timespec) -> String {
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

/// Where log lines go, shared by every copy of a `Logger`: the level (changed live by a reload) and the descriptor,
/// stderr or a file opened for appending and opened again on SIGHUP (after logrotate moved it).
public final class LogSink: Sendable {
    private let levelRaw: Atomic<Int>
    /// The file's descriptor (2: stderr). Swapped under the lock; a write holds it for its one `write(2)`.
    private let fd: Mutex<Int32>
    public let path: String?
    public let format: LogFormat

    init(level: LogLevel, path: String?, format: LogFormat) {
        self.format = format
        levelRaw = Atomic(level.rawValue)
        self.path = path
        fd = Mutex(2)
        if path != nil { _ = reopen() }
    }

    public var level: LogLevel {
        @inline(__always) get { LogLevel(rawValue: levelRaw.load(ordering: .relaxed)) ?? .info }
        set { levelRaw.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// Opens `path` again (appending; created 0600), the old descriptor closed once the new one is in. Nil on
    /// success, else why (the old file stays in use).
    @discardableResult
    public func reopen() -> String? {
        guard let path else { return nil }
        let new = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard new >= 0 else { return "cannot open the log file \(path): \(String(cString: strerror(errno)))" }
        let old = fd.withLock { fd in
            let old = fd
            fd = new
            return old
        }
        if old != 2 { close(old) }
        return nil
    }

    func write(_ line: String) {
        var line = line
        line.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    func write(bytes: [UInt8]) { bytes.withUnsafeBytes { write($0) } }

    func write(_ b: UnsafeRawBufferPointer) {
        fd.withLock { fd in
            var off = 0
            while off < b.count {
                let n = Glibc.write(fd, b.baseAddress! + off, b.count - off)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                off += n
            }
        }
    }
}
