#if canImport(Glibc)
import Glibc
#endif
import FerryClient

/// Exit codes of `ferry`: documented in `ferry --help` and README.
/// This command's version (`ferry --version`, the default `User-Agent` of `ferry fetch`).
let ferryVersion = "0.1.0"

enum ExitCode: Int32 {
    case success = 0
    case operationFailed = 1
    case usage = 2
    case noDaemon = 3
    /// `ferry fetch -f` and an HTTP status of 400 or more: curl's code for the same case.
    case httpError = 22
    /// `-C` and an origin that does not answer the range: curl's code for the same case.
    case cannotResume = 33
    // `ferry fetch`'s failures, with curl's codes for the same cases (CurlExit).
    case couldNotResolve = 6
    case couldNotConnect = 7
    case timedOut = 28
    case tlsConnect = 35
    case tooManyRedirects = 47
    case tlsVerify = 60
    case fileTooLarge = 63
    /// The output could not be written (or binary output to a terminal was refused): curl's 23.
    case writeError = 23
}

/// A failure that ends the command with an exit code and a message on stderr.
struct CommandFailure: Error {
    var code: ExitCode
    var message: String
    /// `ferry fetch --retry`: the try stopped at a transient status's head, to be tried again.
    var retryStatus: RetryPolicy.Problem? = nil
}

extension CommandFailure {
    /// A failed call: exit 3 when the daemon went away (or never answered), 1 otherwise.
    init(_ e: FerryError) {
        self.init(code: e.raisedBy == .connection ? .noDaemon : .operationFailed, message: "\(e.codeName): \(e.message)")
    }

    /// Says why on stderr (nothing when the message is empty: the output said it, as `exists` prints 0) and
    /// returns the exit code.
    func report() -> Int32 {
        if !message.isEmpty { writeStderr("ferry: \(message)") }
        return code.rawValue
    }
}

func writeStderr(_ s: String) {
    var line = s + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// Without a newline (progress bars).
func writeStderrRaw(_ s: String) {
    var text = s
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

func writeStdout(_ bytes: [UInt8]) { _ = writeAll(1, bytes) }

/// Writes every byte, in pieces (`FileOutput`: a file written a quarter MiB at a time cost twice the time); false
/// on an error, with `errno` set.
func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { FileOutput.writeAll(fd, $0) }
}

func jsonLine(_ value: JSONValue) -> String { String(decoding: JSONWriter.encode(value), as: UTF8.self) }

/// "8.6 KB", "1.2 MB": decimal units, as people read sizes.
func humanBytes(_ n: Int64) -> String {
    if n < 1000 { return "\(n) B" }
    let units = ["KB", "MB", "GB", "TB"]
    var v = Double(n) / 1000
    var k = 0
    while v >= 1000 && k < units.count - 1 {
        v /= 1000
        k += 1
    }
    return "\(oneDecimal(v)) \(units[k])"
}

func oneDecimal(_ v: Double) -> String {
    let tenths = Int64((v * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

/// "1h 2m 5s", "350 ms".
func humanDuration(ms: Int64) -> String {
    if ms < 1000 { return "\(ms) ms" }
    var s = ms / 1000
    let h = s / 3600
    s %= 3600
    let m = s / 60
    s %= 60
    if h > 0 { return "\(h)h \(m)m \(s)s" }
    if m > 0 { return "\(m)m \(s)s" }
    return "\(s)s"
}

/// Milliseconds with three decimals: "0.087 ms".
func formatMs(_ d: Duration) -> String {
    let (s, atto) = d.components
    let micros = s * 1_000_000 + atto / 1_000_000_000_000
    let frac = micros % 1000
    return "\(micros / 1000).\(frac < 10 ? "00" : frac < 100 ? "0" : "")\(frac) ms"
}

/// Reads all of standard input.
func readStdin() -> [UInt8] { readAll(fd: 0) }

/// Reads a descriptor to its end, retrying on EINTR.
func readAll(fd: Int32) -> [UInt8] {
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let n = read(fd, &buf, buf.count)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        out.append(contentsOf: buf[..<n])
    }
    return out
}

func readFile(_ path: String) throws(CommandFailure) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw CommandFailure(code: .usage, message: "cannot read \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    return readAll(fd: fd)
}

/// A body handed over as a descriptor, to stdout (`sendfile`, or reads and writes for a terminal).
func copyToStdout(_ body: BodyFile) throws(CommandFailure) {
    do { try body.copy(to: 1) } catch { throw CommandFailure(code: .operationFailed, message: "cannot write the body to stdout: \(error.message)") }
}

/// A body handed over as a descriptor, to a new or truncated file.
func writeFile(_ path: String, _ body: BodyFile) throws(CommandFailure) {
    do { try body.copy(toPath: path) } catch { throw CommandFailure(code: .operationFailed, message: "cannot write \(path): \(error.message)") }
}

func writeFile(_ path: String, _ bytes: [UInt8]) throws(CommandFailure) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw CommandFailure(code: .operationFailed, message: "cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    guard writeAll(fd, bytes) else { throw CommandFailure(code: .operationFailed, message: "cannot write \(path): \(String(cString: strerror(errno)))") }
}
