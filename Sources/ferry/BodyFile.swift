#if canImport(Glibc)
import Glibc
#endif

/// Where `ferry fetch -o FILE` writes a body as it arrives: a temporary file beside FILE (`FILE.ferry-part-PID`),
/// renamed onto FILE once the whole body is there and wanted, removed otherwise. So a download costs this process a
/// few buffers whatever its size, and a failed one (an error, a cut connection, `-f` and a status of 400 or more)
/// never leaves a partial FILE, nor replaces an existing one.
///
/// ```swift
/// let file = try BodyFile(path: "big.bin")
/// try file.append(chunk)        // for each chunk
/// try file.commit()             // or let it go: the temporary file is removed
/// ```
final class BodyFile {
    let path: String
    let temporary: String
    private var fd: Int32
    private var committed = false

    init(path: String) throws(CommandFailure) {
        self.path = path
        temporary = "\(path).ferry-part-\(getpid())"
        // Never through a planted link, never over someone else's file: a fresh name, created here.
        fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw BodyFile.failure("cannot write \(temporary)") }
    }

    deinit {
        if fd >= 0 { close(fd) }
        if !committed { unlink(temporary) }
    }

    func append(_ bytes: [UInt8]) throws(CommandFailure) {
        guard writeAll(fd, bytes) else { throw BodyFile.failure("cannot write \(temporary)") }
    }

    /// The body is complete and wanted: FILE becomes it, in one rename.
    func commit() throws(CommandFailure) {
        let rc = close(fd)
        fd = -1
        guard rc == 0 else { throw BodyFile.failure("cannot write \(temporary)") }
        guard rename(temporary, path) == 0 else { throw BodyFile.failure("cannot rename \(temporary) to \(path)") }
        committed = true
    }

    private static func failure(_ what: String) -> CommandFailure {
        CommandFailure(code: .operationFailed, message: "\(what): \(String(cString: strerror(errno)))")
    }
}
