#if canImport(Glibc)
import Glibc
#endif
import FerryBytes
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
/// Why so written: the log is on by default, so its line is part of every request's cost. Each line is written
/// through one `ByteCursor` into room reserved for it (`AppendBuffer`), and its time is read once per iteration:
/// the lines of one iteration carry the time of its first (nginx caches its time once per event-loop cycle the
/// same way). Made of ~20 array appends and a clock read each, a line cost more than a pipelined ping (perf:
/// 508,000 pings a second at info against 980,000 at warn).
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
    private var buffer = AppendBuffer(capacity: 16 * 1024)
    /// The time of the lines being buffered, `2026-12-03T08:47:00.123Z`: read when a line finds the buffer empty.
    private var stamp: [UInt8] = []
    /// The formatted date and time of the current second, and that second (formatting a date per line cost more
    /// than the rest).
    private var secondPrefix: [UInt8] = []
    private var second: Int = -1
    /// The wall clock (tests count its reads).
    private let clock: () -> timespec

    /// The most buffer a flush leaves it: one line with a very long URL must not keep megabytes for good.
    static let keptBufferBytes = 1 << 20

    init(sink: LogSink, format: LogFormat, slowMs: Int, clock: @escaping () -> timespec = AccessLog.realtime) {
        self.sink = sink
        self.format = format
        slowNs = UInt64(slowMs) * 1_000_000
        self.clock = clock
    }

    /// Whether a request that took this long gets a line (info for every one, warn for slow ones); asked before
    /// an entry is made, so a daemon at warn spends nothing on fast requests. Inlined, as the level it reads: the
    /// fast path asks it for every request, and as a call it retained and released the log each time (callgrind).
    @inline(__always)
    func wants(nanoseconds: UInt64) -> Bool { sink.level <= (nanoseconds >= slowNs ? .warn : .info) }

    func request(_ e: AccessEntry) {
        let slow = e.nanoseconds >= slowNs
        guard sink.level <= (slow ? .warn : .info) else { return }
        if buffer.isEmpty { readTime() }
        // The room a line may take: its fixed parts and numbers (~250 bytes at most), and each text escaped, at
        // most 6 bytes a byte (`\u001f`) and its quotes.
        var texts = e.op.utf8.count + e.outcome.utf8.count + (e.namespace?.utf8.count ?? 0) + (e.key?.utf8.count ?? 0)
        texts += (e.url?.utf8.count ?? 0) + (e.cacheStatus?.utf8.count ?? 0)
        buffer.append(room: 320 + 6 * texts) { c in write(e, slow: slow, to: &c) }
        if buffer.count >= 1 << 16 { flush() }
    }

    private func write(_ e: AccessEntry, slow: Bool, to c: inout ByteCursor) {
        let json = format == .json
        if json { c.ascii("{\"time\":\"") }
        stamp.withUnsafeBytes { c.bytes($0) }
        if json {
            c.ascii(slow ? "\",\"level\":\"warn\",\"msg\":\"access\"" : "\",\"level\":\"info\",\"msg\":\"access\"")
        } else {
            c.ascii(slow ? " warn access" : " info access")
        }
        text("op", e.op, json, &c)
        number("conn", e.connection, json, &c)
        number("uid", UInt64(e.uid), json, &c)
        if let ns = e.namespace { text("ns", ns, json, &c) }
        if let key = e.key { text("key", key, json, &c) }
        if let url = e.url { text("url", url, json, &c) }
        text("status", e.outcome, json, &c)
        if let http = e.httpStatus { number("http", UInt64(max(0, http)), json, &c) }
        if let cache = e.cacheStatus { text("cache", cache, json, &c) }
        number("bytes", UInt64(max(0, e.bytes)), json, &c)
        name("ms", json, &c)
        let us = e.nanoseconds / 1000, frac = us % 1000
        c.int(Int64(us / 1000))
        c.byte(UInt8(ascii: "."))
        c.byte(UInt8(48 + frac / 100))
        c.byte(UInt8(48 + frac / 10 % 10))
        c.byte(UInt8(48 + frac % 10))
        if slow {
            name("slow", json, &c)
            c.ascii("true")
        }
        if json { c.byte(UInt8(ascii: "}")) }
        c.byte(UInt8(ascii: "\n"))
    }

    /// ` key=` (logfmt) or `,"key":` (JSON).
    private func name(_ key: StaticString, _ json: Bool, _ c: inout ByteCursor) {
        if json {
            c.byte(UInt8(ascii: ","))
            c.byte(UInt8(ascii: "\""))
            c.ascii(key)
            c.byte(UInt8(ascii: "\""))
            c.byte(UInt8(ascii: ":"))
        } else {
            c.byte(UInt8(ascii: " "))
            c.ascii(key)
            c.byte(UInt8(ascii: "="))
        }
    }

    private func text(_ key: StaticString, _ value: String, _ json: Bool, _ c: inout ByteCursor) {
        name(key, json, &c)
        if json {
            JSONWriter.writeString(value, to: &c)
        } else if AccessLog.isBare(value) {
            c.utf8(value)
        } else {
            c.utf8(AccessLog.logfmt(value))
        }
    }

    private func number(_ key: StaticString, _ value: UInt64, _ json: Bool, _ c: inout ByteCursor) {
        name(key, json, &c)
        c.int(Int64(bitPattern: value))
    }

    static func realtime() -> timespec {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ts
    }

    /// The time of the lines to come, `2026-12-03T08:47:00.123Z`, the second's part made once a second (from the
    /// same reading as the milliseconds: a second read could fall in the next second).
    private func readTime() {
        let ts = clock()
        if ts.tv_sec != second {
            second = ts.tv_sec
            secondPrefix = Array(Logger.timestamp(ts).prefix(19).utf8)   // through the seconds
        }
        let ms = Int(ts.tv_nsec / 1_000_000)
        stamp.removeAll(keepingCapacity: true)
        stamp += secondPrefix
        stamp += [UInt8(ascii: "."), UInt8(48 + ms / 100), UInt8(48 + ms / 10 % 10), UInt8(48 + ms % 10), UInt8(ascii: "Z")]
    }

    /// Writes the buffered lines in one go.
    func flush() {
        guard !buffer.isEmpty else { return }
        sink.write(buffer.bytes)
        buffer.removeAll(keepingAtMost: AccessLog.keptBufferBytes)
    }

    /// Whether a logfmt value goes as it is: not empty, and no space, quote, equals sign or control character.
    static func isBare(_ v: String) -> Bool {
        guard !v.isEmpty else { return false }
        var v = v
        return v.withUTF8 { bytes in
            for b in bytes where b <= 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "=") || b == 0x7f { return false }
            return true
        }
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
