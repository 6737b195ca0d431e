import Testing
@testable import FerryArgs

@Suite struct ArgParserTests {
    let parser = ArgParser([
        OptionSpec("socket", takesValue: true, help: "socket"),
        OptionSpec("output", short: "o", takesValue: true, help: "output"),
        OptionSpec("json", short: "j", help: "json"),
        OptionSpec("help", short: "h", help: "help"),
    ])

    @Test func optionsAnywhereAndBothValueForms() throws {
        let a = try parser.parse(["call", "--socket", "/s", "ping", "--json", "-o", "out", "--socket=/t", "{}"])
        #expect(a.positionals == ["call", "ping", "{}"])
        #expect(a.value("socket") == "/t", "the last value wins")
        #expect(a.value("output") == "out")
        #expect(a.has("json") && !a.has("help"))
    }

    @Test func doubleDashAndLoneDash() throws {
        let a = try parser.parse(["set", "-", "--", "--json", "-o"])
        #expect(a.positionals == ["set", "-", "--json", "-o"])
        #expect(!a.has("json"))
    }

    @Test func repeatedOptionsKeepEveryValueInOrder() throws {
        let a = try parser.parse(["-o", "a", "--output=b", "-oc"])
        #expect(a.allValues("output") == ["a", "b", "c"])
        #expect(a.value("output") == "c")
        #expect(a.allValues("socket").isEmpty)
    }

    @Test func shortClustersAsCurlUsersWriteThem() throws {
        let a = try parser.parse(["-hj", "-ofile", "x"])
        #expect(a.has("help") && a.has("json"))
        #expect(a.value("output") == "file" && a.positionals == ["x"])
        let b = try parser.parse(["-ho", "out"])
        #expect(b.has("help") && b.value("output") == "out", "a value option at the end of a cluster takes the next word")
        #expect(throws: UsageError.self) { try parser.parse(["-ho"]) }
    }

    @Test func emptyValueWithEquals() throws {
        #expect(try parser.parse(["--socket="]).value("socket") == "")
    }

    @Test(arguments: [
        (["--nope"], "unknown option --nope"),
        (["-x"], "unknown option -x"),
        (["--socket"], "option --socket needs a value"),
        (["-o"], "option -o needs a value"),
        (["--json=yes"], "option --json takes no value"),
        (["-hz"], "unknown option -z in -hz"),
    ])
    func usageErrors(_ args: [String], _ message: String) {
        #expect(throws: UsageError(message)) { try parser.parse(args) }
    }

    @Test func helpTextListsEveryOption() {
        let text = parser.helpText
        for name in ["--socket VALUE", "-o, --output VALUE", "--json", "-h, --help"] {
            #expect(text.contains(name), "\(name)")
        }
    }
}

@Suite struct DurationTests {
    @Test(arguments: [("250ms", Int64(250)), ("30s", 30_000), ("1.5s", 1500), ("5m", 300_000), ("2h", 7_200_000), ("10", 10_000), ("0", 0)])
    func valid(_ text: String, _ ms: Int64) throws {
        #expect(try parseDurationMs(text) == ms)
    }

    @Test(arguments: ["", "s", "-1s", "abc", "10x", "+5s", "1e999s", "ms"])
    func invalid(_ text: String) {
        #expect(throws: UsageError.self) { try parseDurationMs(text) }
    }
}
