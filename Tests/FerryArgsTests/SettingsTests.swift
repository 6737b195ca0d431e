import Testing
@testable import FerryArgs

@Suite struct SettingsTests {
    static let options = [
        OptionSpec("memory-limit", takesValue: true, default: "256MiB", help: "memory"),
        OptionSpec("disk-limit", takesValue: true, help: "disk"),
        OptionSpec("socket", takesValue: true, help: "socket"),
        OptionSpec("allow-other-users", help: "flag"),
    ]

    @Test func laterLayersWinAndEachValueKnowsWhereItCameFrom() throws {
        var s = Settings(options: Self.options)
        try s.apply(file: """
            # ferryd.conf
            memory-limit = 1GiB
              disk-limit=2GiB   # for the CI box
            allow-other-users = yes
            socket = "/run/ferry/ferryd.sock"
            """, path: "/etc/ferry/ferryd.conf")
        try s.apply(environment: ["FERRY_MEMORY_LIMIT": "2GiB", "FERRY_NO_AUTOSTART": "1"])
        s.apply(try ArgParser(Self.options).parse(["--disk-limit", "5GiB", "extra"]))
        #expect(s.value("memory-limit") == "2GiB" && s.source("memory-limit") == .environment("FERRY_MEMORY_LIMIT"))
        #expect(s.value("disk-limit") == "5GiB" && s.source("disk-limit") == .commandLine)
        #expect(s.has("allow-other-users") && s.source("allow-other-users") == .file("/etc/ferry/ferryd.conf", line: 4))
        #expect(s.value("socket") == "/run/ferry/ferryd.sock", "quotes go")
        #expect(s.source("nothing") == .builtIn && s.positionals == ["extra"])
        #expect(s.located("allow-other-users", "--allow-other-users is bad") == "/etc/ferry/ferryd.conf:4: allow-other-users: is bad")
        #expect(s.located("disk-limit", "--disk-limit is bad") == "--disk-limit is bad", "the command line's own words")
    }

    @Test func mistakesNameTheFileAndLine() {
        func error(_ text: String) -> String? {
            var s = Settings(options: Self.options)
            do { try s.apply(file: text, path: "f.conf") } catch { return error.message }
            return nil
        }
        #expect(error("memory-limit = 1GiB\nmemroy-limit = 2") == "f.conf:2: unknown setting \"memroy-limit\" (the names are ferryd's options without their dashes; ferryd --help)")
        #expect(error("\n\nmemory-limit =") == "f.conf:3: memory-limit needs a value (memory-limit = …)")
        #expect(error("allow-other-users = maybe")?.hasPrefix("f.conf:1: allow-other-users is true or false") == true)
        #expect(error("memory-limit") != nil, "a value option without a value")
        #expect(error("allow-other-users") == nil, "a bare flag is true")
        var s = Settings(options: Self.options)
        #expect(throws: UsageError.self) { try s.apply(environment: ["FERRY_ALLOW_OTHER_USERS": "perhaps"]) }
        #expect(Settings.environmentName("image-max-pixels") == "FERRY_IMAGE_MAX_PIXELS")
    }

    @Test func aFlagCanBeTurnedOffByALaterLayer() throws {
        var s = Settings(options: Self.options)
        try s.apply(file: "allow-other-users = true", path: "f")
        try s.apply(environment: ["FERRY_ALLOW_OTHER_USERS": "off"])
        #expect(!s.has("allow-other-users"))
    }

    @Test func helpShowsDefaults() {
        #expect(ArgParser(Self.options).helpText.contains("memory (default: 256MiB)"))
    }
}
