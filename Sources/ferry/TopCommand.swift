#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryClient
import FerryProtocol

/// `ferry top`: a live view in the spirit of varnishstat and `redis-cli --stat`, redrawn each second on the
/// terminal's alternate screen until `q` (or Ctrl-C); on a narrow terminal every line is cut to fit. When stdout
/// is not a terminal it prints one line a second instead (for a log or a pipe), until interrupted.
struct TopCommand {
    let args: ParsedArgs
    let commands: Commands

    static let usage = "Usage: ferry top [--socket PATH]\n\nA live view of the daemon: requests/s by operation, hit ratios, bytes/s, budgets as bars, transfers in flight. q quits.\nWhen stdout is not a terminal: one line a second."

    func run() async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let interactive = isatty(1) == 1 && isatty(0) == 1
        let terminal = interactive ? RawTerminal() : nil
        defer { terminal?.restore() }
        var previous: JSONObject?
        var then = ContinuousClock.now
        while true {
            let current = try await commands.run { try await client.stats() }
            let now = ContinuousClock.now
            let elapsed = now - then
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let size = TopCommand.windowSize()
            let view = TopView(previous: previous, current: current, seconds: seconds, width: interactive ? size.columns : 10_000)
            if let terminal {
                terminal.draw(view.screen(height: size.rows))
            } else {
                writeStdout(Array((view.line(time: TopCommand.clock()) + "\n").utf8))
            }
            previous = current
            then = now
            // A second, unless a key ends it first.
            if let terminal, terminal.waitForQuit(milliseconds: 1000) { return }
            if terminal == nil { try? await Task.sleep(for: .seconds(1)) }
        }
    }

    static func windowSize() -> (rows: Int, columns: Int) {
        var ws = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0 else { return (24, 80) }
        return (Int(ws.ws_row), Int(ws.ws_col))
    }

    static func clock() -> String {
        var t = time(nil)
        var parts = tm()
        localtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }
}

/// The terminal in the state a full-screen view needs: the alternate screen, no cursor, keys read one at a time
/// without echo (Ctrl-C read as a key, so the terminal is always put back).
final class RawTerminal {
    private var saved = termios()

    init() {
        tcgetattr(0, &saved)
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
        tcsetattr(0, TCSANOW, &raw)
        writeStdout(Array("\u{1b}[?1049h\u{1b}[?25l".utf8))
    }

    func draw(_ lines: [String]) {
        // Home, each line cleared to its end, then the rest of the screen cleared: no flicker from a full clear.
        var out = "\u{1b}[H"
        for line in lines { out += line + "\u{1b}[K\r\n" }
        out += "\u{1b}[J"
        writeStdout(Array(out.utf8))
    }

    /// True when `q`, `Q` or Ctrl-C came within the time.
    func waitForQuit(milliseconds: Int32) -> Bool {
        var remaining = milliseconds
        while remaining > 0 {
            var p = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            let started = ContinuousClock.now
            guard poll(&p, 1, remaining) > 0 else { return false }
            var byte: UInt8 = 0
            if read(0, &byte, 1) == 1, byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") || byte == 3 { return true }
            let spent = ContinuousClock.now - started
            remaining -= Int32(spent.components.seconds * 1000 + spent.components.attoseconds / 1_000_000_000_000_000)
        }
        return false
    }

    func restore() {
        writeStdout(Array("\u{1b}[?25h\u{1b}[?1049l".utf8))
        tcsetattr(0, TCSANOW, &saved)
    }
}
