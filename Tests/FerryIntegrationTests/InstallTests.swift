import Foundation
import Testing

/// `make install` and what it installs, checked with the real tools: the files land under PREFIX (and only there,
/// and `make uninstall` takes exactly them back), the man pages list exactly the options `--help` lists, every
/// completion script is valid to its shell and completes what the option tables say, and the systemd units pass
/// `systemd-analyze verify` (which a broken unit does not).
extension IntegrationTests {
@Suite struct InstallTests {
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // …/Tests/FerryIntegrationTests/InstallTests.swift → repo
        return url.path
    }()

    static func make(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
        try runCommand("/usr/bin/make", ["-C", root, "--no-print-directory"] + args)
    }

    /// The long options a help text lists (`--name`), and those a man page lists (`\-\-name` in bold).
    static func helpOptions(_ text: String) -> Set<String> {
        Set(text.split(separator: "\n").compactMap { line -> String? in
            let t = line.trimmingCharacters(in: .whitespaces)
            guard let r = t.range(of: "--"), t.hasPrefix("--") || t.hasPrefix("-") else { return nil }
            return String(t[r.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" })
        })
    }

    static func manOptions(_ roff: String) -> Set<String> {
        Set(roff.split(separator: "\n").filter { $0.hasPrefix("\\fB") && $0.contains("\\-\\-") }.compactMap { line -> String? in
            guard let r = line.range(of: "\\fB\\-\\-"), let end = line[r.upperBound...].range(of: "\\fR") else { return nil }
            return line[r.upperBound..<end.lowerBound].replacingOccurrences(of: "\\-", with: "-")
        })
    }

    @Test func manPagesListExactlyTheOptionsOfHelp() throws {
        for (binary, page) in [(Binaries.ferryd, "Sources/ferryd/dist/ferryd.8"), (Binaries.ferry, "Sources/ferry/dist/ferry.1")] {
            let help = try runCommand(binary, ["--help"]).out
            let inHelp = Self.helpOptions(String(help[help.range(of: "Options:")!.upperBound...]))
            let inMan = Self.manOptions(try String(contentsOfFile: Self.root + "/" + page, encoding: .utf8))
            #expect(inHelp.count > 30)
            #expect(inHelp.subtracting(inMan).isEmpty, "\(page) lacks \(inHelp.subtracting(inMan).sorted())")
            #expect(inMan.subtracting(inHelp).isEmpty, "\(page) lists what --help does not: \(inMan.subtracting(inHelp).sorted())")
            let rendered = try runCommand("/usr/bin/man", ["--warnings", "-l", Self.root + "/" + page], environment: ["MANWIDTH": "100"])
            #expect(rendered.status == 0 && rendered.err.isEmpty && rendered.out.contains("SYNOPSIS"), "\(rendered.err)")
        }
    }

    @Test func installAndUninstallUnderPrefix() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let prefix = dir.path + "/usr"
        let installed = try Self.make(["install-files", "FERRY_BIN=\(Binaries.directory)", "PREFIX=\(prefix)"])
        #expect(installed.status == 0, "\(installed.err)")
        let files = (FileManager.default.enumerator(atPath: dir.path)?.allObjects as? [String] ?? [])
            .filter { !(try! FileManager.default.attributesOfItem(atPath: dir.path + "/" + $0)[.type] as? FileAttributeType == .typeDirectory) }
            .sorted()
        #expect(files == ["usr/bin/ferry", "usr/bin/ferryd", "usr/lib/systemd/system/ferryd.service", "usr/lib/systemd/system/ferryd.socket",
                          "usr/lib/systemd/user/ferryd.service", "usr/lib/systemd/user/ferryd.socket",
                          "usr/share/bash-completion/completions/ferry", "usr/share/bash-completion/completions/ferryd",
                          "usr/share/doc/ferry/ferryd.conf.example", "usr/share/fish/vendor_completions.d/ferry.fish",
                          "usr/share/fish/vendor_completions.d/ferryd.fish", "usr/share/man/man1/ferry.1", "usr/share/man/man8/ferryd.8",
                          "usr/share/zsh/site-functions/_ferry", "usr/share/zsh/site-functions/_ferryd"])
        let unit = try String(contentsOfFile: prefix + "/lib/systemd/user/ferryd.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=\(prefix)/bin/ferryd\n") && !unit.contains("@BINDIR@"))
        #expect(try runCommand(prefix + "/bin/ferryd", ["--version"]).out == "ferryd 0.1.0\n")
        let example = try runCommand(prefix + "/bin/ferryd", ["--config", prefix + "/share/doc/ferry/ferryd.conf.example", "--print-config"])
        #expect(example.status == 0, "the example configuration reads: \(example.err)")

        // The units, with the tools systemd gives: both kinds verify; a broken copy does not.
        let env = ["MANPATH": prefix + "/share/man", "XDG_RUNTIME_DIR": dir.path]
        for (kind, flags) in [("system", [String]()), ("user", ["--user"])] {
            let units = ["ferryd.socket", "ferryd.service"].map { "\(prefix)/lib/systemd/\(kind)/\($0)" }
            let verified = try runCommand("/usr/bin/systemd-analyze", flags + ["verify"] + units, environment: env)
            #expect(verified.status == 0 && verified.err.isEmpty, "\(kind): \(verified.err)")
        }
        let broken = dir.path + "/broken"
        try FileManager.default.createDirectory(atPath: broken, withIntermediateDirectories: true)
        try unit.replacingOccurrences(of: "ExecStart=", with: "ExecStrat=").write(toFile: broken + "/ferryd.service", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: prefix + "/lib/systemd/user/ferryd.socket", toPath: broken + "/ferryd.socket")
        let refused = try runCommand("/usr/bin/systemd-analyze", ["--user", "verify", broken + "/ferryd.socket", broken + "/ferryd.service"], environment: env)
        #expect(refused.status != 0, "verify catches a broken unit")

        let removed = try Self.make(["uninstall", "PREFIX=\(prefix)"])
        #expect(removed.status == 0)
        let left = (FileManager.default.enumerator(atPath: prefix)?.allObjects as? [String] ?? [])
            .filter { (try? FileManager.default.attributesOfItem(atPath: prefix + "/" + $0)[.type] as? FileAttributeType) == .typeRegular }
        #expect(left.isEmpty, "uninstall leaves \(left)")
    }

    /// Each script passes its shell's syntax check; bash's completes commands, actions and each command's options.
    @Test func completionScriptsWorkInTheirShells() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for shell in ["bash", "zsh", "fish"] {
            for (program, args) in [(Binaries.ferry, ["completions", shell]), (Binaries.ferryd, ["--completions", shell])] {
                let script = try runCommand(program, args)
                #expect(script.status == 0 && !script.out.isEmpty)
                let path = dir.path + "/\((program as NSString).lastPathComponent).\(shell)"
                try script.out.write(toFile: path, atomically: true, encoding: .utf8)
                guard FileManager.default.isExecutableFile(atPath: "/usr/bin/\(shell)") else {
                    Issue.record("/usr/bin/\(shell) is missing (make deps installs it)")
                    continue
                }
                let checked = try runCommand("/usr/bin/\(shell)", ["-n", path])
                #expect(checked.status == 0 && checked.err.isEmpty, "\(shell) -n \(path): \(checked.err)")
            }
        }
        func complete(_ words: [String]) throws -> Set<String> {
            let line = words.map { "'\($0)'" }.joined(separator: " ")
            let r = try runCommand("/usr/bin/bash", ["-c", "source \(dir.path)/ferry.bash; COMP_WORDS=(\(line)); COMP_CWORD=\(words.count - 1); _ferry; printf '%s\\n' \"${COMPREPLY[@]}\""])
            return Set(r.out.split(separator: "\n").map(String.init))
        }
        #expect(try complete(["ferry", "ca"]) == ["cache", "call"])
        #expect(try complete(["ferry", "cache", "in"]) == ["incr"])
        #expect(try complete(["ferry", "fetch", "--max-"]) == ["--max-time", "--max-redirs", "--max-filesize"])
        #expect(try complete(["ferry", "cache", "--tt"]) == ["--ttl"])
        #expect(try complete(["ferry", "cache", "--max-"]).isEmpty, "fetch's options are not cache's")
    }
}
}
