/// A command-line option: `--name VALUE` (or `--name=VALUE`) when it takes a value, `--name` when it is a flag.
public struct OptionSpec: Sendable {
    public var name: String
    public var short: Character?
    public var takesValue: Bool
    public var help: String
    /// The commands that take this option; empty: every command. Another command given it is a usage error
    /// (`ArgParser.misplaced`), not an option silently ignored.
    public var commands: [String]
    /// The value used when none is given, as a person writes it (help text and `--print-config` show it).
    public var defaultValue: String?

    public init(_ name: String, short: Character? = nil, takesValue: Bool = false, default defaultValue: String? = nil,
                help: String, commands: [String] = []) {
        self.name = name
        self.short = short
        self.takesValue = takesValue
        self.help = help
        self.commands = commands
        self.defaultValue = defaultValue
    }
}

/// A usage mistake: the command prints it with the help text and exits 2.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What the command line said.
public struct ParsedArgs: Sendable, Equatable {
    /// Option values by long name; a repeated option keeps its last value here and every value in `lists`.
    public var values: [String: String] = [:]
    /// Every value of each option, in order (for repeatable options such as `-H`).
    public var lists: [String: [String]] = [:]
    /// Flags that were given, by long name.
    public var flags: Set<String> = []
    /// Everything that is not an option, in order.
    public var positionals: [String] = []

    public init() {}

    public func value(_ name: String) -> String? { values[name] }
    public func allValues(_ name: String) -> [String] { lists[name] ?? [] }
    public func has(_ name: String) -> Bool { flags.contains(name) }

    mutating func set(_ name: String, _ value: String) {
        values[name] = value
        lists[name, default: []].append(value)
    }
}

/// A small parser for Ferry's two commands: long options with values, short aliases, flags, positionals anywhere,
/// and `--` to end options. Hand-written because no argument-parsing package can be fetched here; kept small and
/// unit-tested.
///
/// ```swift
/// let parser = ArgParser([OptionSpec("socket", takesValue: true, help: "socket path"),
///                         OptionSpec("json", help: "print JSON")])
/// let args = try parser.parse(["stats", "--json", "--socket=/tmp/s"])
/// args.positionals   // ["stats"]
/// ```
public struct ArgParser: Sendable {
    public let options: [OptionSpec]

    public init(_ options: [OptionSpec]) { self.options = options }

    private func isNegativeNumber(_ arg: String) -> Bool {
        let digits = arg.dropFirst()
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return false }
        return !options.contains { $0.short.map { $0 == digits.first! } ?? false }
    }

    public func parse(_ arguments: [String]) throws(UsageError) -> ParsedArgs {
        var result = ParsedArgs()
        var k = 0
        var optionsEnded = false
        while k < arguments.count {
            let arg = arguments[k]
            k += 1
            // A negative number is an operand (`ferry cache incr hits -5`) unless an option is spelled as a digit.
            if optionsEnded || arg == "-" || !arg.hasPrefix("-") || isNegativeNumber(arg) {
                result.positionals.append(arg)
                continue
            }
            if arg == "--" {
                optionsEnded = true
                continue
            }
            if !arg.hasPrefix("--"), arg.count > 2 {
                k = try shortCluster(arg, arguments, k, &result)
                continue
            }
            let (spec, inlineValue) = try lookup(arg)
            if spec.takesValue {
                if let inlineValue {
                    result.set(spec.name, inlineValue)
                } else {
                    guard k < arguments.count else { throw UsageError("option \(arg) needs a value") }
                    result.set(spec.name, arguments[k])
                    k += 1
                }
            } else {
                if inlineValue != nil { throw UsageError("option --\(spec.name) takes no value") }
                result.flags.insert(spec.name)
            }
        }
        return result
    }

    /// `-fsS` (several flags) or `-XPOST` / `-ofile` (an option and its value), as curl users write them.
    private func shortCluster(_ arg: String, _ arguments: [String], _ next: Int, _ result: inout ParsedArgs) throws(UsageError) -> Int {
        var letters = Substring(arg.dropFirst())
        while let letter = letters.first {
            letters = letters.dropFirst()
            guard let spec = options.first(where: { $0.short == letter }) else { throw UsageError("unknown option -\(letter) in \(arg)") }
            if spec.takesValue {
                if !letters.isEmpty {
                    result.set(spec.name, String(letters))
                    return next
                }
                guard next < arguments.count else { throw UsageError("option -\(letter) needs a value") }
                result.set(spec.name, arguments[next])
                return next + 1
            }
            result.flags.insert(spec.name)
        }
        return next
    }

    private func lookup(_ arg: String) throws(UsageError) -> (OptionSpec, String?) {
        if arg.hasPrefix("--") {
            let body = arg.dropFirst(2)
            let name: Substring
            var value: String? = nil
            if let eq = body.firstIndex(of: "=") {
                name = body[..<eq]
                value = String(body[body.index(after: eq)...])
            } else {
                name = body
            }
            guard let spec = options.first(where: { $0.name == name }) else { throw UsageError("unknown option --\(name)") }
            return (spec, value)
        }
        let letters = arg.dropFirst()
        guard letters.count == 1, let spec = options.first(where: { $0.short == letters.first }) else {
            throw UsageError("unknown option \(arg)")
        }
        return (spec, nil)
    }

    /// The first option given that `command` does not take, as a usage message; nil when every one belongs.
    ///
    /// ```swift
    /// parser.misplaced(try parser.parse(["fetch", "--ttl", "5s", "u"]), command: "fetch")
    /// // "--ttl is not an option of ferry fetch (it belongs to: cache)"
    /// ```
    public func misplaced(_ args: ParsedArgs, command: String) -> String? {
        let given = Set(args.flags).union(args.values.keys)
        for spec in options where given.contains(spec.name) && !spec.commands.isEmpty && !spec.commands.contains(command) {
            return "--\(spec.name) is not an option of ferry \(command) (it belongs to: \(spec.commands.joined(separator: ", ")))"
        }
        return nil
    }

    /// The same parser with `name` taking a value (or not) from now on: a word one command uses as a flag and
    /// another with a value (`--json` prints JSON for `stats`, sends JSON for `fetch`, as curl's does).
    public func with(_ name: String, takingValue: Bool, help: String) -> ArgParser {
        ArgParser(options.map { o in
            guard o.name == name else { return o }
            var changed = o
            changed.takesValue = takingValue
            changed.help = help
            return changed
        })
    }

    /// Option lines for help text: `  -o, --output FILE   write here`.
    public var helpText: String {
        let rows = options.map { o -> (String, String) in
            let short = o.short.map { "-\($0), " } ?? "    "
            return ("  \(short)--\(o.name)\(o.takesValue ? " VALUE" : "")", o.help + (o.defaultValue.map { " (default: \($0))" } ?? ""))
        }
        let width = (rows.map(\.0.count).max() ?? 0) + 2
        return rows.map { $0.0 + String(repeating: " ", count: width - $0.0.count) + $0.1 }.joined(separator: "\n")
    }
}

/// Parses a duration such as `250ms`, `30s`, `5m`, `1h` or a bare number of seconds into milliseconds.
public func parseDurationMs(_ text: String) throws(UsageError) -> Int64 {
    let units: [(String, Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000), ("w", 604_800_000)]
    for (suffix, scale) in units where text.hasSuffix(suffix) {
        let number = text.dropLast(suffix.count)
        if let v = Double(number), v >= 0, v.isFinite, !number.isEmpty, number.first != "+" {
            return Int64((v * scale).rounded())
        }
        if suffix == "ms" || suffix == "s" && !text.hasSuffix("ms") { break }
    }
    if let v = Double(text), v >= 0, v.isFinite, text.first != "+" { return Int64((v * 1000).rounded()) }
    throw UsageError("invalid duration \"\(text)\" (examples: 500ms, 30s, 5m, 2h, 1d, 1w)")
}

/// Parses a byte size: a plain number, or with a unit (`KB`/`MB`/`GB` decimal, `KiB`/`MiB`/`GiB` binary, `K`/`M`/`G`
/// binary as shells write them). Nil when it is not one.
public func parseByteSize(_ text: String) -> Int? {
    let units: [(String, Int)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("KB", 1000), ("MB", 1_000_000),
                                  ("GB", 1_000_000_000), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("B", 1)]
    for (suffix, scale) in units where text.hasSuffix(suffix) {
        guard let n = Int(text.dropLast(suffix.count)), n >= 0, n <= Int.max / scale else { return nil }
        return n * scale
    }
    guard let n = Int(text), n >= 0 else { return nil }
    return n
}
