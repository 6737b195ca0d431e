#if canImport(Glibc)
import Glibc
#endif
import FerryProtocol

/// How log lines are written: `logfmt` (`key=value`, the default, as Heroku and Grafana Loki read them) or JSON lines.
public enum LogFormat: String, Sendable, CaseIterable {
    case logfmt, json
}

/// One line per request, as nginx and Varnish users expect an access log: time, operation, connection and uid, the
/// key or URL, the result (ok or the error code), the HTTP status and cache status of a fetch, body bytes, and
/// milliseconds; a request slower than `--slow-ms` is flagged (`slow=true`, at warn). Written at info level.
///
/// Why buffered: a line per request at 200,000 requests a second is a `write(2)` each otherwise. Lines are appended
/// to one buffer and written together once per loop iteration (`flush`, from the server's end of iteration), as
/// nginx's `access_log … buffer=` does. Loop thread only.
///
/// ```swift
/// log.request(AccessEntry(op: "cache.get", connection: 3, uid: 1000, key: "k", namespace: "default", outcome: "ok",
///                         bytes: 12, nanoseconds: 40_000))
/// // 2026-12-03T08:47:00.123Z info access op=cache.get conn=3 uid=1000 ns=default key=k status=ok bytes=12 ms=0.040
/// log.flush()
/// ```
final class AccessLog {
    let sink: LogSink
    let format: LogFormat
    /// Requests at least this slow are flagged.
    let slowNs: UInt64
    private var buffer: [UInt8] = []
    /// The formatted time of the current second, and that second (formatting a date per line cost more than the rest).
    private var secondPrefix: [UInt8] = []
    private var second: Int = -1

    init(sink: LogSink, format: LogFormat, slowMs: Int) {
        self.sink = sink
        self.format = format
        slowNs = UInt64(slowMs) * 1_000_000
    }

    /// Whether a request that took this long gets a line (info for every one, warn for slow ones); asked before
    /// an entry is made, so a daemon at warn spends nothing on fast requests. Inlined, as the level it reads: the
    /// fast path asks it for every request, and as a call it retained and released the log each time (callgrind).
    @inline(__always)
    func wants(nanoseconds: UInt64) -> Bool { sink.level <= (nanoseconds >= slowNs ? .warn : .info) }

    func request(_ e: AccessEntry) {
        let slow = e.nanoseconds >= slowNs
        guard sink.level <= (slow ? .warn : .info) else { return }
        // Written byte by byte into the buffer: the strings and arrays of a formatted line cost a third of a
        // cache.get's throughput (measured with ferry-bench at 50 connections).
        appendTime()
        switch format {
        case .logfmt: buffer += (slow ? " warn access" : " info access").utf8
        case .json: buffer += (slow ? "\",\"level\":\"warn\",\"msg\":\"access\"" : "\",\"level\":\"info\",\"msg\":\"access\"").utf8
        }
        text("op", e.op)
        number("conn", e.connection)
        number("uid", UInt64(e.uid))
        if let ns = e.namespace { text("ns", ns) }
        if let key = e.key { text("key", key) }
        if let url = e.url { text("url", url) }
        text("status", e.outcome)
        if let http = e.httpStatus { number("http", UInt64(max(0, http))) }
        if let cache = e.cacheStatus { text("cache", cache) }
        number("bytes", UInt64(max(0, e.bytes)))
        name("ms")
        appendMilliseconds(e.nanoseconds)
        if slow {
            name("slow")
            buffer += "true".utf8
        }
        if format == .json { buffer.append(UInt8(ascii: "}")) }
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= 1 << 16 { flush() }
    }

    /// ` key=` (logfmt) or `,"key":` (JSON).
    private func name(_ key: StaticString) {
        let isJSON = format == .json
        if isJSON {
            buffer.append(UInt8(ascii: ","))
            buffer.append(UInt8(ascii: "\""))
        } else {
            buffer.append(UInt8(ascii: " "))
        }
        buffer.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        if isJSON {
            buffer.append(UInt8(ascii: "\""))
            buffer.append(UInt8(ascii: ":"))
        } else {
            buffer.append(UInt8(ascii: "="))
        }
    }

    private func text(_ key: StaticString, _ value: String) {
        name(key)
        switch format {
        case .logfmt: if AccessLog.isBare(value) { buffer += value.utf8 } else { buffer += AccessLog.logfmt(value).utf8 }
        case .json: JSONWriter.writeString(value, to: &buffer)
        }
    }

    private func number(_ key: StaticString, _ value: UInt64) {
        name(key)
        JSONWriter.writeInt(Int64(bitPattern: value), to: &buffer)
    }

    /// `2026-12-03T08:47:00.123Z` (JSON: after `{"time":"`), the second's part made once a second.
    private func appendTime() {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        if ts.tv_sec != second {
            second = ts.tv_sec
            secondPrefix = Array(Logger.timestamp().prefix(19).utf8)   // through the seconds
        }
        if format == .json { buffer += "{\"time\":\"".utf8 }
        buffer += secondPrefix
        let ms = Int(ts.tv_nsec / 1_000_000)
        buffer += [UInt8(ascii: "."), UInt8(48 + ms / 100), UInt8(48 + ms / 10 % 10), UInt8(48 + ms % 10), UInt8(ascii: "Z")]
    }

    private func appendMilliseconds(_ ns: UInt64) {
        let us = ns / 1000
        JSONWriter.writeInt(Int64(us / 1000), to: &buffer)
        let frac = Int(us % 1000)
        buffer += [UInt8(ascii: "."), UInt8(48 + frac / 100), UInt8(48 + frac / 10 % 10), UInt8(48 + frac % 10)]
    }

    /// Writes the buffered lines in one go.
    func flush() {
        guard !buffer.isEmpty else { return }
        sink.write(bytes: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    static func isBare(_ v: String) -> Bool {
        !v.isEmpty && !v.utf8.contains { $0 <= 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") || $0 == 0x7f }
    }

    /// A logfmt value: bare when it has no space, quote, equals sign or control character; else quoted and escaped.
    static func logfmt(_ v: String) -> String {
        guard !isBare(v) else { return v }
        var out = "\""
        for c in v.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: if c.value < 0x20 || c.value == 0x7f { out += "\\u{\(String(c.value, radix: 16))}" } else { out.unicodeScalars.append(c) }
            }
        }
        return out + "\""
    }
}

/// What an access line says of one request.
struct AccessEntry {
    var op: String
    var connection: UInt64
    var uid: UInt32
    var key: String? = nil
    var namespace: String? = nil
    var url: String? = nil
    /// "ok", or the error code.
    var outcome: String
    var httpStatus: Int? = nil
    var cacheStatus: String? = nil
    var bytes: Int
    var nanoseconds: UInt64
}
