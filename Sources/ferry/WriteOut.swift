import FerryClient
import FerryProtocol

/// `ferry fetch -w FORMAT` (curl's `--write-out`): after the transfer, FORMAT with its variables replaced, on
/// stdout. Variables, as curl names them: `%{http_code}` (also `%{response_code}`), `%{time_total}` (seconds, six
/// decimals), `%{size_download}` (body bytes received), `%{url_effective}` (after redirects), `%{num_redirects}`,
/// `%{content_type}`, `%{json}` (every variable as one JSON object), and Ferry's own `%{ferry_cache}` (hit, miss,
/// revalidated, stale, coalesced, bypass) and `%{ferry_age}`. `\n`, `\r`, `\t` and `\\` are escapes, `%%` is `%`;
/// an unknown variable is written as it was, as curl does.
///
/// ```swift
/// WriteOut.render("%{http_code} %{ferry_cache}\n", WriteOut.Transfer(response: r, bytes: 1024, seconds: 0.012))
/// // "200 hit\n"
/// ```
enum WriteOut {
    struct Transfer {
        var response: FetchResponse
        var bytes: Int
        var seconds: Double
    }

    static func variables(_ t: Transfer) -> [(String, JSONValue)] {
        let r = t.response
        return [
            ("http_code", .int(Int64(r.status))), ("response_code", .int(Int64(r.status))),
            ("time_total", .double(t.seconds)), ("size_download", .int(Int64(t.bytes))),
            ("url_effective", .string(r.url)), ("num_redirects", .int(Int64(r.redirects))),
            ("content_type", .string(r.header("content-type") ?? "")),
            ("ferry_cache", .string(r.cacheStatus?.rawValue ?? "")), ("ferry_age", .int(Int64(r.age))),
        ]
    }

    static func render(_ format: String, _ t: Transfer) -> String {
        let vars = Dictionary(variables(t), uniquingKeysWith: { a, _ in a })
        var out = ""
        var chars = Substring(format)
        while let c = chars.first {
            chars.removeFirst()
            if c == "\\", let next = chars.first {
                chars.removeFirst()
                switch next {
                case "n": out += "\n"
                case "r": out += "\r"
                case "t": out += "\t"
                case "\\": out += "\\"
                default: out += "\\" + String(next)
                }
            } else if c == "%", chars.first == "%" {
                chars.removeFirst()
                out += "%"
            } else if c == "%", chars.first == "{", let close = chars.firstIndex(of: "}") {
                let name = String(chars[chars.index(after: chars.startIndex)..<close])
                chars = chars[chars.index(after: close)...]
                if name == "json" {
                    out += jsonText(.object(JSONObject(variables(t).map { (key: $0.0, value: $0.1) })))
                } else if let value = vars[name] {
                    out += text(value)
                } else {
                    out += "%{\(name)}"
                }
            } else {
                out.append(c)
            }
        }
        return out
    }

    private static func text(_ v: JSONValue) -> String {
        switch v {
        case .int(let n): return String(n)
        case .double(let d): return fixed6(d)
        case .string(let s): return s
        default: return jsonText(v)
        }
    }

    /// Seconds with six decimals, as curl writes `time_total`.
    static func fixed6(_ seconds: Double) -> String {
        let micros = Int64((max(0, seconds) * 1_000_000).rounded())
        let fraction = String(micros % 1_000_000)
        return "\(micros / 1_000_000)." + String(repeating: "0", count: 6 - fraction.count) + fraction
    }

    private static func jsonText(_ v: JSONValue) -> String {
        var out: [UInt8] = []
        JSONWriter.write(v, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
