#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryClient
import FerryProtocol

/// `ferry logs [-f] [-n N]`: the daemon's log, as `docker logs` and `journalctl -f` show theirs. The running daemon
/// says where its log goes (`stats`' `log.file`); without one answering, the auto-started daemon's log beside the
/// socket. `-f` follows it, across a rotation (the file replaced or cut short), until interrupted.
struct LogsCommand {
    let args: ParsedArgs
    let commands: Commands

    static let usage = """
        Usage: ferry logs [-f | --follow] [-n N | --lines N] [--socket PATH]

        The daemon's log: the file the running daemon writes (--log-file), else the auto-started daemon's log beside
        its socket. -n: only the last N lines. -f: keep printing lines as they come (Ctrl-C ends).
        A daemon logging to stderr (under systemd: journalctl --user -u ferryd) has no file to show.
        """

    /// `-f` and `-n` mean follow and lines here (elsewhere they are fetch's --fail and cache's --namespace).
    static func rewrite(_ words: [String]) -> [String] {
        guard words.first == "logs" else { return words }
        return words.map { $0 == "-f" ? "--follow" : $0 == "-n" ? "--lines" : $0 }
    }

    func run() async throws(CommandFailure) {
        guard args.positionals.count == 1 else { throw CommandFailure(code: .usage, message: LogsCommand.usage) }
        var last: Int?
        if let text = args.value("lines") {
            guard let n = Int(text), n >= 0 else { throw CommandFailure(code: .usage, message: "--lines takes a count, not \"\(text)\"") }
            last = n
        }
        let path = try await logPath()
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CommandFailure(code: .operationFailed, message: "cannot read \(path): \(String(cString: strerror(errno)))") }
        var reader = LogReader(fd: fd, path: path)
        writeStdout(reader.tail(last))
        guard args.has("follow") else { return reader.close() }
        while true {
            writeStdout(reader.more())
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    private func logPath() async throws(CommandFailure) -> String {
        let launcher = commands.launcher
        if let client = try await launcher.tryConnect() {
            defer { client.close() }
            if let file = (try? await client.stats())?["log"]?["file"]?.stringValue {
                guard file != "stderr" else {
                    throw CommandFailure(code: .operationFailed, message: "the running ferryd logs to stderr (under systemd: journalctl --user -u ferryd); it has no file to show")
                }
                return file
            }
        }
        return FerryDaemon.logPath(forSocket: launcher.socketPath)
    }
}

/// A log file read to its end, then followed: new bytes as they come, and from the start again when the file was
/// replaced (another inode at the path) or cut short.
struct LogReader {
    private var fd: Int32
    let path: String
    private var offset: off_t = 0

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    /// Everything there now, or its last `lines` lines.
    mutating func tail(_ lines: Int?) -> [UInt8] {
        let all = more()
        guard let lines else { return all }
        guard lines > 0 else { return [] }
        // Back from the end (a final newline ends the last line, it does not start another) to the newline before
        // the last `lines` lines.
        var count = 0, i = all.count - 1
        if i >= 0 && all[i] == UInt8(ascii: "\n") { i -= 1 }
        while i >= 0 {
            if all[i] == UInt8(ascii: "\n") {
                count += 1
                if count == lines { return Array(all[(i + 1)...]) }
            }
            i -= 1
        }
        return all
    }

    /// What was appended since the last call (reopening the path when the file was rotated).
    mutating func more() -> [UInt8] {
        var st = stat(), now = stat()
        if fstat(fd, &st) == 0, stat(path, &now) == 0, now.st_ino != st.st_ino || now.st_size < offset {
            let fresh = open(path, O_RDONLY | O_CLOEXEC)
            if fresh >= 0 {
                // What the old file got after our last read first, then the new one from its start.
                let rest = readToEnd()
                Glibc.close(fd)
                fd = fresh
                offset = 0
                return rest + readToEnd()
            }
        }
        return readToEnd()
    }

    private mutating func readToEnd() -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = pread(fd, &buffer, buffer.count, offset)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return out }
            out += buffer[..<n]
            offset += off_t(n)
        }
    }

    func close() { Glibc.close(fd) }
}
