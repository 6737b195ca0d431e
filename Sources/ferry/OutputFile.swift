#if canImport(Glibc)
import Glibc
#endif
import FerryClient

/// Where `ferry fetch -o FILE` writes a body as it arrives: a temporary file beside FILE (`FILE.ferry-part-PID`),
/// renamed onto FILE once the whole body is there and wanted, removed otherwise. So a download costs this process a
/// few buffers whatever its size, and a failed one (an error, a cut connection, `-f` and a status of 400 or more)
/// never leaves a partial FILE, nor replaces an existing one. FILE that is not a regular file (a device, a FIFO) is
/// written directly.
///
/// ```swift
/// let file = try OutputFile(path: "big.bin")
/// try file.append(chunk)        // for each chunk
/// try file.commit()             // or let it go: the temporary file is removed
/// ```
final class OutputFile {
    let path: String
    let temporary: String
    private var fd: Int32
    private var committed = false

    /// `-C`: the body's rest goes straight onto the end of FILE, which has `size` bytes (a download that resumes
    /// keeps what each try brought, as curl's does).
    init(appendingTo path: String, size: Int) throws(CommandFailure) {
        self.path = path
        temporary = path
        committed = true  // nothing to rename or remove: the bytes are FILE's as they come
        fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw OutputFile.failure("cannot write \(path)") }
        var st = stat()
        guard fstat(fd, &st) == 0, Int(st.st_size) == size else {
            throw CommandFailure(code: .operationFailed, message: "\(path) changed while resuming it")
        }
    }

    /// The size of an existing FILE to resume (0 when there is none).
    static func existingSize(_ path: String) -> Int {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG ? Int(st.st_size) : 0
    }

    init(path: String) throws(CommandFailure) {
        self.path = path
        // A device, a FIFO or a socket (`-o /dev/null`, `-o /dev/stdout`, a pipe's name) is written as it is, as curl
        // writes it: a file renamed onto it would replace the device itself (as root, /dev/null became a file).
        var st = stat()
        if stat(path, &st) == 0, (st.st_mode & S_IFMT) != S_IFREG, (st.st_mode & S_IFMT) != S_IFDIR {
            temporary = path
            committed = true
            fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw OutputFile.failure("cannot write \(path)") }
            return
        }
        temporary = "\(path).ferry-part-\(getpid())"
        // Never through a planted link, never over someone else's file: a fresh name, created here.
        fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw OutputFile.failure("cannot write \(temporary)") }
    }

    deinit {
        if fd >= 0 { close(fd) }
        if !committed { unlink(temporary) }
    }

    func append(_ bytes: [UInt8]) throws(CommandFailure) {
        guard writeAll(fd, bytes) else { throw OutputFile.failure("cannot write \(temporary)") }
    }

    /// The whole body, handed over as a descriptor: copied in the kernel (`copy_file_range`), never read here.
    func append(from body: BodyFile) throws(CommandFailure) {
        do { try body.copy(to: fd) } catch { throw CommandFailure(code: .operationFailed, message: "cannot write \(temporary): \(error.message)") }
    }

    /// The body is complete and wanted: FILE becomes it, in one rename (appended: it is FILE already).
    func commit() throws(CommandFailure) {
        let rc = close(fd)
        fd = -1
        guard rc == 0 else { throw OutputFile.failure("cannot write \(temporary)") }
        if temporary == path { return }
        guard rename(temporary, path) == 0 else { throw OutputFile.failure("cannot rename \(temporary) to \(path)") }
        committed = true
    }

    private static func failure(_ what: String) -> CommandFailure {
        CommandFailure(code: .operationFailed, message: "\(what): \(String(cString: strerror(errno)))")
    }
}
