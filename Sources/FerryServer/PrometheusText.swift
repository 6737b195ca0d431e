/// Prometheus' text exposition format (version 0.0.4), written by hand: a family's `# HELP` and `# TYPE` lines once,
/// then its samples, label values escaped (`\`, `"`, newline). Small on purpose; `promtool check metrics` checks what
/// it writes in the tests.
///
/// ```swift
/// var text = PrometheusText()
/// text.family("ferry_requests_total", .counter, "Requests by operation and result code.")
/// text.sample("ferry_requests_total", ["op": "ping", "code": "ok"], 3)
/// text.output   // "# HELP ferry_requests_total …\n# TYPE ferry_requests_total counter\nferry_requests_total{…} 3\n"
/// ```
struct PrometheusText {
    enum Kind: String { case counter, gauge, histogram }

    private(set) var output = ""

    mutating func family(_ name: String, _ kind: Kind, _ help: String) {
        output += "# HELP \(name) \(PrometheusText.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    /// One sample; labels in the order given (a `KeyValuePairs` keeps it).
    mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String> = [:], _ value: Double) {
        output += name
        if !labels.isEmpty {
            output += "{" + labels.map { "\($0.key)=\"\(PrometheusText.escapeLabel($0.value))\"" }.joined(separator: ",") + "}"
        }
        output += " " + PrometheusText.number(value) + "\n"
    }

    mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String> = [:], _ value: UInt64) {
        sample(name, labels, Double(value))
    }

    /// A one-sample family.
    mutating func single(_ name: String, _ kind: Kind, _ help: String, _ value: Double) {
        family(name, kind, help)
        sample(name, [:], value)
    }

    static func number(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }

    static func escapeLabel(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    static func escapeHelp(_ s: String) -> String {
        s.replacingAll("\\", with: "\\\\").replacingAll("\n", with: "\\n")
    }
}

extension String {
    func replacingAll(_ a: Character, with b: String) -> String {
        var out = ""
        for c in self { if c == a { out += b } else { out.append(c) } }
        return out
    }
}
