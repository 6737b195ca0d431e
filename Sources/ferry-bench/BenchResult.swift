/// What one mode measured, printed twice: a `RESULT key=value …` line that bench/run.sh (and any script) parses
/// with plain `grep`/`sed`, and a line for people. The key names are shared with bench/rawpingpong.c so that Ferry's
/// numbers and the physical-limit reference line up column for column.
struct BenchResult {
    var mode: String
    /// Requests completed (sent and answered) inside the measured interval.
    var requests: Int
    /// From the first request sent to the last reply read.
    var elapsedNanos: UInt64
    var latencies: LatencySamples
    /// Size of one `ping` request frame, header included: the size the C reference sends.
    var requestBytes: Int
    /// Size of one `pong` reply frame, header included: the size the C reference answers with.
    var replyBytes: Int
    var connections: Int
    /// Requests kept outstanding per connection (or, in `client` mode, concurrent tasks; in the cache modes, the
    /// requests sent together in one batch).
    var inFlight: Int
    /// More `key=value` fields for the machine line (the cache modes' operation, key space and value size).
    var extra = ""

    var opsPerSecond: Double {
        elapsedNanos == 0 ? 0 : Double(requests) / (Double(elapsedNanos) / 1e9)
    }

    /// `RESULT mode=raw-seq ops_per_s=41234 p50_us=21.4 p99_us=35.0 msg_bytes=34 reply_bytes=58 …`
    var machineLine: String {
        let p = latencies.percentilesMicros()
        return "RESULT mode=\(mode) ops_per_s=\(Int(opsPerSecond.rounded()))"
            + " p50_us=\(p.map { decimal($0.p50, 1) } ?? "nan") p99_us=\(p.map { decimal($0.p99, 1) } ?? "nan")"
            + " msg_bytes=\(requestBytes) reply_bytes=\(replyBytes)"
            + " conns=\(connections) in_flight=\(inFlight) requests=\(requests) seconds=\(decimal(Double(elapsedNanos) / 1e9, 3))"
            + (extra.isEmpty ? "" : " " + extra)
    }

    /// `raw-seq          41,234 req/s   p50 21.4 µs   p99 35.0 µs   (1 conn × 1 in flight, 34 B → 58 B, …)`
    var humanLine: String {
        let p = latencies.percentilesMicros()
        let lat = p.map { "p50 \(decimal($0.p50, 1)) µs   p99 \(decimal($0.p99, 1)) µs" } ?? "no latency samples"
        let shape = "\(connections) conn\(connections == 1 ? "" : "s") × \(inFlight) in flight"
        return pad(mode, 18) + pad(grouped(Int(opsPerSecond.rounded())) + " req/s", 13, left: true) + "   " + lat
            + "   (\(shape), \(requestBytes) B request → \(replyBytes) B reply, \(grouped(requests)) requests"
            + " in \(decimal(Double(elapsedNanos) / 1e9, 2)) s)"
    }
}

/// `v` with exactly `digits` decimals, without Foundation's `String(format:)` (the package keeps Foundation out).
func decimal(_ v: Double, _ digits: Int) -> String {
    guard v.isFinite else { return "nan" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int64((abs(v) * scale).rounded())
    let whole = scaled / Int64(scale)
    var text = (v < 0 && scaled != 0 ? "-" : "") + "\(whole)"
    if digits > 0 {
        let fraction = String(scaled % Int64(scale))
        text += "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
    return text
}

/// 1234567 → "1,234,567": throughput figures are read at a glance.
func grouped(_ n: Int) -> String {
    let digits = Array(String(n.magnitude))
    var out = ""
    for (k, d) in digits.enumerated() {
        if k > 0 && (digits.count - k) % 3 == 0 { out.append(",") }
        out.append(d)
    }
    return (n < 0 ? "-" : "") + out
}

func pad(_ s: String, _ width: Int, left: Bool = false) -> String {
    let fill = String(repeating: " ", count: max(0, width - s.count))
    return left ? fill + s : s + fill
}
