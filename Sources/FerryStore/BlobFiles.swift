#if canImport(Glibc)
import Glibc
#endif
import FerryBytes
import FerryCache

/// Large values as files named by the SHA-256 of their content, in fan-out folders (`ab/cd/abcd…`), so equal
/// values share one file and no folder grows huge. A file is written under a temporary name and renamed into place,
/// so a reader (or a restart after `kill -9`) never sees a partial file under a real name.
struct BlobFiles {
    let root: String

    /// Whether a blob's bytes are synced to the disk before it is named (`--fsync always`).
    let syncWrites: Bool

    init(root: String, syncWrites: Bool = false) throws(StoreError) {
        self.root = root
        self.syncWrites = syncWrites
        try BlobFiles.makeDirectory(root)
    }

    func path(of hash: String) -> String {
        let a = hash.prefix(2), b = hash.dropFirst(2).prefix(2)
        return "\(root)/\(a)/\(b)/\(hash)"
    }

    /// Writes `bytes` (if no file with this content exists yet) and returns its hash.
    func write(_ bytes: [UInt8]) throws(StoreError) -> String {
        guard let hash = BlobHash.hex(of: bytes) else { throw .io("could not hash a value (libcrypto's SHA-256 failed)") }
        let final = path(of: hash)
        if access(final, F_OK) == 0 { return hash }
        let dir = String(final[..<final.lastIndex(of: "/")!])
        try BlobFiles.makeDirectory(String(dir[..<dir.lastIndex(of: "/")!]))
        try BlobFiles.makeDirectory(dir)
        let temp = "\(dir)/.tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw BlobFiles.failure("create \(temp)") }
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + off, bytes.count - off) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let err = BlobFiles.failure("write \(temp)")
                close(fd)
                unlink(temp)
                throw err
            }
            off += n
        }
        if syncWrites && fdatasync(fd) != 0 {
            let err = BlobFiles.failure("sync \(temp)")
            close(fd)
            unlink(temp)
            throw err
        }
        close(fd)
        guard rename(temp, final) == 0 else {
            let err = BlobFiles.failure("rename \(temp)")
            unlink(temp)
            throw err
        }
        return hash
    }

    /// The file's bytes, or nil when it is missing or not `expectedSize` long (never a partial value).
    func read(_ hash: String, expectedSize: Int) -> [UInt8]? {
        let fd = open(path(of: hash), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out = [UInt8](repeating: 0, count: expectedSize)
        var off = 0
        while off < expectedSize {
            let n = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + off, expectedSize - off) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            off += n
        }
        var extra: UInt8 = 0
        return Glibc.read(fd, &extra, 1) == 0 ? out : nil
    }

    /// Moves a finished file of the same file system under a new random name (no content hash: the file is too
    /// large to read again for one; equal bodies are rare enough not to share) and returns that name.
    func adopt(_ source: String) throws(StoreError) -> String {
        let name = (0..<4).map { _ in
            let hex = String(UInt64.random(in: 0...UInt64.max), radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
        let final = path(of: name)
        let dir = String(final[..<final.lastIndex(of: "/")!])
        try BlobFiles.makeDirectory(String(dir[..<dir.lastIndex(of: "/")!]))
        try BlobFiles.makeDirectory(dir)
        if syncWrites {
            let fd = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { throw BlobFiles.failure("open \(source)") }
            defer { close(fd) }
            guard fdatasync(fd) == 0 else { throw BlobFiles.failure("sync \(source)") }
        }
        guard rename(source, final) == 0 else { throw BlobFiles.failure("rename \(source)") }
        return name
    }

    /// The `Checksum64` of a file that should be `size` bytes long, read once in pieces; nil when it is not.
    static func checksum(ofFileAt path: String, size: Int) -> Int64? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return checksum(of: fd, size: size)
    }

    /// The same for an open file, read in pieces of 1 MiB (`pread`, not a mapping: a file cut short under the
    /// daemon must be an error, not a SIGBUS).
    static func checksum(of fd: Int32, size: Int) -> Int64? {
        var sum = Checksum64.Running(count: size)
        var offset = 0
        while offset < size {
            guard let piece = FileRead.exactly(fd, count: min(1 << 20, size - offset), at: offset) else { return nil }
            sum.add(piece)
            offset += piece.count
        }
        var extra: UInt8 = 0
        guard pread(fd, &extra, 1, off_t(size)) == 0 else { return nil }
        return Int64(bitPattern: sum.finish())
    }

    func remove(_ hash: String) { unlink(path(of: hash)) }

    /// Every blob hash on disk; temporary files left by a crash are deleted on the way.
    func allHashes() -> [String] {
        var out: [String] = []
        for a in BlobFiles.entries(root) where a.count == 2 {
            for b in BlobFiles.entries("\(root)/\(a)") where b.count == 2 {
                for name in BlobFiles.entries("\(root)/\(a)/\(b)") {
                    if name.hasPrefix(".tmp-") { unlink("\(root)/\(a)/\(b)/\(name)") } else { out.append(name) }
                }
            }
        }
        return out
    }

    static func entries(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func makeDirectory(_ path: String) throws(StoreError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw failure("mkdir \(path)") }
    }

    static func failure(_ what: String) -> StoreError {
        let e = errno
        let text = "\(what): \(String(cString: strerror(e)))"
        if e == ENOSPC || e == EDQUOT { return .diskFull(text) }
        if e == EMFILE || e == ENFILE { return .tooManyFiles(text) }
        if e == EROFS || e == EACCES || e == EPERM { return .readOnly(text) }
        return .io(text)
    }
}
