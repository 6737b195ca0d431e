/// Where a setting's value came from (`ferryd --print-config`, and the place an error names).
public enum SettingSource: Sendable, Equatable, CustomStringConvertible {
    case builtIn
    case file(String, line: Int)
    case environment(String)
    case commandLine

    public var description: String {
        switch self {
        case .builtIn: return "default"
        case .file(let path, let line): return "\(path):\(line)"
        case .environment(let name): return "environment \(name)"
        case .commandLine: return "command line"
        }
    }
}

/// One configuration from three layers with the same names, later ones winning: a file (`name = value` lines,
/// as the flags are named without their dashes), `FERRY_*` environment variables (`FERRY_MEMORY_LIMIT` for
/// `--memory-limit`), and the command line. A flag (an option without a value) is `true` or `false` in a file or
/// the environment (also yes/no, on/off, 1/0); given on the command line it is true. Pure: the caller reads the
/// file and the environment.
///
/// ```swift
/// var s = Settings(options: DaemonOptions.parser.options)
/// try s.apply(file: "memory-limit = 1GiB\n# a comment\nallow-other-users = yes\n", path: "/etc/ferry/ferryd.conf")
/// s.apply(environment: ["FERRY_MEMORY_LIMIT": "2GiB"])
/// s.apply(try DaemonOptions.parser.parse(["--disk-limit", "5GiB"]))
/// s.value("memory-limit")    // "2GiB"
/// s.source("memory-limit")   // .environment("FERRY_MEMORY_LIMIT")
/// s.located("memory-limit", "--memory-limit needs a size")   // "environment FERRY_MEMORY_LIMIT: memory-limit: needs a size"
/// ```
public struct Settings: Sendable {
    /// The options that may be set this way (every option but the ones that only make sense typed: help, …).
    public let options: [OptionSpec]
    private var entries: [String: (value: String, source: SettingSource)] = [:]
    /// Repeatable options given on the command line keep every value.
    private var lists: [String: [String]] = [:]
    public private(set) var positionals: [String] = []

    public init(options: [OptionSpec]) { self.options = options }

    /// The environment variable of an option: `FERRY_` and its name in capitals, dashes as underscores.
    public static func environmentName(_ option: String) -> String {
        "FERRY_" + String(option.uppercased().map { $0 == "-" ? "_" : $0 })
    }

    /// Applies a configuration file's text. An unknown name, a line that is no setting, a flag with a value other
    /// than a boolean, or an option given no value is an error naming the file and the line.
    public mutating func apply(file text: String, path: String) throws(UsageError) {
        var number = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let line = raw.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            let name: String, value: String?
            if let eq = line.firstIndex(of: "=") {
                name = String(line[..<eq]).trimmingSpaces()
                value = Settings.unquoted(String(line[line.index(after: eq)...]).trimmingSpaces())
            } else {
                name = line
                value = nil
            }
            let place = "\(path):\(number)"
            guard let spec = options.first(where: { $0.name == name }) else {
                throw UsageError("\(place): unknown setting \"\(name)\" (the names are ferryd's options without their dashes; ferryd --help)")
            }
            let source = SettingSource.file(path, line: number)
            if spec.takesValue {
                guard let value, !value.isEmpty else { throw UsageError("\(place): \(name) needs a value (\(name) = …)") }
                entries[name] = (value, source)
            } else {
                guard let flag = value.map(Settings.boolean) ?? true else {
                    throw UsageError("\(place): \(name) is true or false, not \"\(value ?? "")\"")
                }
                entries[name] = (flag ? "true" : "false", source)
            }
        }
    }

    /// Applies the `FERRY_*` variables that name options; others (a client's `FERRY_NO_AUTOSTART`) are not ours.
    public mutating func apply(environment: (String) -> String?) throws(UsageError) {
        for spec in options {
            let variable = Settings.environmentName(spec.name)
            guard let value = environment(variable), !value.isEmpty else { continue }
            if spec.takesValue {
                entries[spec.name] = (value, .environment(variable))
            } else {
                guard let flag = Settings.boolean(value) else { throw UsageError("\(variable) is true or false, not \"\(value)\"") }
                entries[spec.name] = (flag ? "true" : "false", .environment(variable))
            }
        }
    }

    public mutating func apply(environment: [String: String]) throws(UsageError) { try apply(environment: { environment[$0] }) }

    public mutating func apply(_ args: ParsedArgs) {
        for (name, value) in args.values { entries[name] = (value, .commandLine) }
        for name in args.flags { entries[name] = ("true", .commandLine) }
        for (name, values) in args.lists { lists[name] = values }
        positionals = args.positionals
    }

    /// A default other than the option's own (`ferryd --system`'s paths), taken unless a layer sets the option.
    public mutating func setDefault(_ name: String, _ value: String) {
        if entries[name] == nil { entries[name] = (value, .builtIn) }
    }

    public func value(_ name: String) -> String? { entries[name].map(\.value) }
    public func has(_ name: String) -> Bool { entries[name]?.value == "true" }
    public func allValues(_ name: String) -> [String] { lists[name] ?? value(name).map { [$0] } ?? [] }
    public func source(_ name: String) -> SettingSource { entries[name]?.source ?? .builtIn }

    /// An error about a setting, prefixed with where its value came from (nothing for the command line, whose
    /// messages already say `--name`).
    public func located(_ name: String, _ message: String) -> String {
        switch source(name) {
        case .commandLine, .builtIn: return message
        case let other:
            let flag = "--\(name) "
            return "\(other): \(name): " + (message.hasPrefix(flag) ? String(message.dropFirst(flag.count)) : message)
        }
    }

    static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: return nil
        }
    }

    /// A value without a comment after it (`memory-limit = 1GiB   # for the CI box`) and without its quotes.
    static func unquoted(_ text: String) -> String {
        if let q = text.first, q == "\"" || q == "'", let close = text.dropFirst().firstIndex(of: q) {
            return String(text[text.index(after: text.startIndex)..<close])
        }
        var previous: Character = "x"
        for i in text.indices {
            if text[i] == "#", previous == " " || previous == "\t" { return String(text[..<i]).trimmingSpaces() }
            previous = text[i]
        }
        return text
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s.removeLast() }
        return String(s)
    }
}
