/// Shell completion scripts for bash, zsh and fish, made from the same option tables the commands parse with, so
/// they cannot drift from `--help`: `ferry completions bash`, `ferryd --completions bash` (and `make install`
/// writes them where each shell looks).
///
/// ```swift
/// let script = Completions(program: "ferry", commands: [("cache", ["get", "set"])], options: parser.options)
/// print(script.render(.bash))   // complete -F _ferry ferry …
/// ```
public struct Completions: Sendable {
    public enum Shell: String, CaseIterable, Sendable { case bash, zsh, fish }

    public let program: String
    /// The commands (first word) and each one's actions (second word); empty for a program without commands.
    public let commands: [(name: String, actions: [String])]
    public let options: [OptionSpec]

    public init(program: String, commands: [(name: String, actions: [String])] = [], options: [OptionSpec]) {
        self.program = program
        self.commands = commands
        self.options = options
    }

    public func render(_ shell: Shell) -> String {
        switch shell {
        case .bash: return bash()
        case .zsh: return zsh()
        case .fish: return fish()
        }
    }

    /// The options a command takes (those without `commands` belong to every one).
    func options(for command: String?) -> [OptionSpec] {
        options.filter { o in o.commands.isEmpty || command.map { o.commands.contains($0) } ?? false }
    }

    private var function: String { "_" + program.map { $0.isLetter || $0.isNumber ? $0 : "_" } }

    private static func words(_ options: [OptionSpec]) -> String {
        options.flatMap { o in ["--" + o.name] + (o.short.map { ["-\($0)"] } ?? []) }.joined(separator: " ")
    }

    private func bash() -> String {
        var cases = ""
        for c in commands {
            cases += "    \(c.name)) subs=\"\(c.actions.joined(separator: " "))\"; opts=\"\(Completions.words(options(for: c.name)))\";;\n"
        }
        let global = Completions.words(options(for: nil))
        let firstWords = commands.isEmpty ? "" : commands.map(\.name).joined(separator: " ")
        return """
            # bash completion for \(program), made by `\(program == "ferry" ? "ferry completions bash" : "\(program) --completions bash")`
            \(function)() {
              local cur="${COMP_WORDS[COMP_CWORD]}" subs="" opts="\(global)"
              if [ "$COMP_CWORD" -eq 1 ] && [ -n "\(firstWords)" ] && [[ "$cur" != -* ]]; then
                COMPREPLY=( $(compgen -W "\(firstWords)" -- "$cur") ); return
              fi
              case "${COMP_WORDS[1]}" in
            \(cases)  esac
              if [[ "$cur" == -* ]]; then COMPREPLY=( $(compgen -W "$opts" -- "$cur") ); return; fi
              if [ "$COMP_CWORD" -eq 2 ] && [ -n "$subs" ]; then COMPREPLY=( $(compgen -W "$subs" -- "$cur") ); return; fi
              COMPREPLY=( $(compgen -f -- "$cur") )
            }
            complete -o filenames -F \(function) \(program)

            """
    }

    private func zsh() -> String {
        var cases = ""
        for c in commands {
            cases += "    \(c.name)) subs=(\(c.actions.joined(separator: " "))); opts=(\(Completions.words(options(for: c.name))));;\n"
        }
        let firstWords = commands.map(\.name).joined(separator: " ")
        return """
            #compdef \(program)
            # zsh completion for \(program), made from its option table
            \(function)() {
              local -a subs opts firsts
              firsts=(\(firstWords))
              opts=(\(Completions.words(options(for: nil))))
              if (( CURRENT == 2 )) && (( ${#firsts} )) && [[ $PREFIX != -* ]]; then compadd -a firsts; return; fi
              case $words[2] in
            \(cases)  esac
              if [[ $PREFIX == -* ]]; then compadd -a opts; return; fi
              if (( CURRENT == 3 )) && (( ${#subs} )); then compadd -a subs; return; fi
              _files
            }
            \(function) "$@"

            """
    }

    private func fish() -> String {
        var lines = ["# fish completion for \(program), made from its option table"]
        if !commands.isEmpty {
            let names = commands.map(\.name).joined(separator: " ")
            lines.append("complete -c \(program) -f -n '__fish_use_subcommand' -a '\(names)'")
            for c in commands where !c.actions.isEmpty {
                lines.append("complete -c \(program) -f -n '__fish_seen_subcommand_from \(c.name); and test (count (commandline -opc)) -eq 2' -a '\(c.actions.joined(separator: " "))'")
            }
        }
        for o in options {
            var line = "complete -c \(program)"
            if !o.commands.isEmpty { line += " -n '__fish_seen_subcommand_from \(o.commands.joined(separator: " "))'" }
            line += " -l \(o.name)"
            if let s = o.short { line += " -s \(s)" }
            if o.takesValue { line += " -r" }
            line += " -d '\(o.help.prefix(70).map { $0 == "'" ? "\u{2019}" : $0 }.reduce("") { $0 + String($1) })'"
            lines.append(line)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
