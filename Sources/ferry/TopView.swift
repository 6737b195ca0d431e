import FerryProtocol

/// What `ferry top` draws from two `stats` snapshots a second apart, for a terminal `width` columns wide: rates
/// over the interval (requests by operation, hit ratios, bytes), budgets as bars, the transfers in flight with
/// their progress. Pure: the command feeds it snapshots and prints its lines (every line at most `width`).
///
/// ```swift
/// let view = TopView(previous: before, current: now, seconds: 1.0, width: 80)
/// view.screen(height: 24)   // ["ferryd 0.1.0 · pid 42 · up 3 m …", "", "requests/s    1234 …", …]
/// view.line                 // "08:55:01 req/s=1234 err/s=0 http_hit=93.1% …" (when stdout is not a terminal)
/// ```
struct TopView {
    let previous: JSONObject?
    let current: JSONObject
    let seconds: Double
    let width: Int

    private func value(_ o: JSONObject?, _ path: String...) -> Int64 {
        var v: JSONValue? = o.map { .object($0) }
        for p in path { v = v?[p] }
        return v?.intValue ?? 0
    }

    /// Per second over the interval (the first screen, with no earlier snapshot, shows 0).
    private func rate(_ path: String...) -> Double {
        guard let previous, seconds > 0 else { return 0 }
        var now: JSONValue? = .object(current), then: JSONValue? = .object(previous)
        for p in path { now = now?[p]; then = then?[p] }
        return Double(max(0, (now?.intValue ?? 0) - (then?.intValue ?? 0))) / seconds
    }

    private func ratio(hits: [String], others: [String], of section: String) -> String {
        func delta(_ key: String) -> Double { rate(section, key) }
        var h = hits.map(delta).reduce(0, +), total = h + others.map(delta).reduce(0, +)
        if total == 0 {   // nothing in the interval: since the start
            h = Double(hits.map { value(current, section, $0) }.reduce(0, +))
            total = h + Double(others.map { value(current, section, $0) }.reduce(0, +))
        }
        return total == 0 ? "-" : Commands.format1(100 * h / total) + "%"
    }

    var httpHit: String { ratio(hits: ["hits", "stale"], others: ["misses", "revalidated", "coalesced", "bypass"], of: "fetch") }
    var cacheHit: String { ratio(hits: ["memory_hits", "disk_hits"], others: ["misses"], of: "cache") }
    var imageHit: String { ratio(hits: ["memory_hits", "disk_hits"], others: ["downloads", "coalesced"], of: "image") }

    private func fraction(_ used: Int64, _ budget: Int64) -> Double { budget > 0 ? min(1, Double(used) / Double(budget)) : 0 }

    /// `[█████░░░░░]`, `cells` wide inside the brackets.
    static func bar(_ f: Double, cells: Int) -> String {
        let n = max(0, cells), filled = Int((f * Double(n)).rounded())
        return "[" + String(repeating: "█", count: min(n, filled)) + String(repeating: "░", count: max(0, n - filled)) + "]"
    }

    private func fit(_ s: String) -> String { s.count <= width ? s : String(s.prefix(max(0, width - 1))) + "…" }

    private var barCells: Int { max(4, min(30, width - 46)) }

    func screen(height: Int) -> [String] {
        let up = humanDuration(ms: value(current, "uptime_ms"))
        var lines = [
            "ferryd \(current["version"]?.stringValue ?? "?") · pid \(value(current, "pid")) · up \(up) · \(value(current, "connections", "open")) connections · q quits",
            "",
            "requests/s  \(Int(rate("requests", "total")))   errors/s \(Int(rate("requests", "errors")))",
        ]
        let ops = (current["ops"]?.objectValue?.members ?? []).map { (name: $0.key, rate: rate("ops", $0.key, "requests")) }
            .filter { $0.rate > 0 }.sorted { $0.rate > $1.rate }
        let top = ops.first?.rate ?? 0
        for op in ops.prefix(5) {
            let label = "  " + op.name.padding(12) + String(Int(op.rate.rounded())).leftPadding(8) + " "
            lines.append(label + TopView.bar(top > 0 ? op.rate / top : 0, cells: barCells).dropFirst().dropLast())
        }
        lines += [
            "hit ratio   HTTP \(httpHit)   cache \(cacheHit)   images \(imageHit)",
            "bytes/s     out \(humanBytes(Int64(rate("bytes", "out"))))/s   from cache \(humanBytes(Int64(rate("fetch", "bytes_from_cache"))))/s"
                + "   from origins \(humanBytes(Int64(rate("fetch", "bytes_from_origin"))))/s",
        ]
        func budget(_ label: String, _ used: Int64, _ limit: Int64) -> String {
            let f = fraction(used, limit)
            return label.padding(12) + TopView.bar(f, cells: barCells) + " " + String(Int((f * 100).rounded())).leftPadding(3)
                + "%  \(humanBytes(used)) / \(humanBytes(limit))"
        }
        lines.append(budget("memory", value(current, "cache", "memory", "bytes"), value(current, "cache", "memory", "budget")))
        lines.append(budget("images", value(current, "image", "bytes"), value(current, "image", "budget")))
        lines.append(budget("disk", value(current, "cache", "disk", "bytes"), value(current, "cache", "disk", "budget")))
        lines.append(budget("buffers", value(current, "memory", "buffers"), value(current, "memory", "buffer_limit")))
        lines.append("transfers   \(value(current, "fetch", "transfers_active")) active, \(value(current, "fetch", "transfers_waiting")) waiting")
        for t in current["fetch"]?["in_flight"]?.arrayValue ?? [] {
            let received = t["received"]?.intValue ?? 0, total = t["total"]?.intValue ?? -1
            let progress = total > 0 ? TopView.bar(Double(received) / Double(total), cells: 10) + " " + humanBytes(received) + " / " + humanBytes(total)
                : humanBytes(received) + " so far"
            lines.append("  " + progress + "  " + (t["url"]?.stringValue ?? ""))
        }
        return lines.prefix(max(1, height)).map(fit)
    }

    /// One line a second, for a pipe or a file.
    func line(time: String) -> String {
        "\(time) req/s=\(Int(rate("requests", "total"))) err/s=\(Int(rate("requests", "errors"))) http_hit=\(httpHit) cache_hit=\(cacheHit)"
            + " out=\(Int(rate("bytes", "out")))B/s transfers=\(value(current, "fetch", "transfers_active"))"
            + " mem=\(Int((fraction(value(current, "cache", "memory", "bytes"), value(current, "cache", "memory", "budget")) * 100).rounded()))%"
            + " disk=\(Int((fraction(value(current, "cache", "disk", "bytes"), value(current, "cache", "disk", "budget")) * 100).rounded()))%"
    }
}

extension String {
    func padding(_ n: Int) -> String { count >= n ? self + " " : self + String(repeating: " ", count: n - count) }
    func leftPadding(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
