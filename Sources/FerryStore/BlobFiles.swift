#if canImport(Glibc)
import Glibc
#endif
import FerryBytes
import FerryCache

/// Large values as files named after their content, in fan-out folders (`ab/cd/abcd…`), so equal values share one
/// file and no folder grows huge. A file is written under a temporary name and renamed into place, so a reader (or a
/// restart after `kill -9`) never sees a partial file under a real name, and never written again once named.
///
/// The name is a fast 64-bit sum of the content and its length (`contentName`), not a cryptographic digest: a file
/// found under it is shared only when its bytes are the value's, compared in full (as ZFS's `dedup=verify`), so no
/// value — however crafted — can take the file of another client's value; one that differs is written under a random
/// name. Why not SHA-256, as before: at 1 MB sets it was half the disk worker's time (libcrypto with the CPU's SHA
/// instructions, ~2 GB/s), and a comparison with a file in the page cache costs a fraction of it. Files named by
/// SHA-256 before stay valid: a name is only ever looked up as the index holds it.
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

    /// The name a value's file is looked for under: `StripedChecksum` of the bytes (`sum`), then their length, in hex.
    static func contentName(of bytes: [UInt8], sum: UInt64? = nil) -> String {
        var name: [UInt8] = []
        BigEndian.append(sum ?? bytes.withUnsafeBytes { StripedChecksum.of($0) }, bytes: 8, to: &name)
        BigEndian.append(UInt64(bytes.count), bytes: 8, to: &name)
        return Hex.lowercase(name)
    }

    /// Writes `bytes` unless a file under their content name holds exactly them, and returns the file's name.
    /// `sum`: their `StripedChecksum`, when the caller has it already.
    func write(_ bytes: [UInt8], sum: UInt64? = nil) throws(StoreError) -> String {
        var hash = BlobFiles.contentName(of: bytes, sum: sum)
        if access(path(of: hash), F_OK) == 0 {
            if BlobFiles.holds(path(of: hash), exactly: bytes) { return hash }
            hash = BlobFiles.randomName()  // the same sum, other bytes: never shared, never replaced
        }
        let final = path(of: hash)
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
        let name = BlobFiles.randomName()
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

    /// 64 random hex digits.
    static func randomName() -> String {
        var name: [UInt8] = []
        for _ in 0..<4 { BigEndian.append(UInt64.random(in: 0...UInt64.max), bytes: 8, to: &name) }
        return Hex.lowercase(name)
    }

    /// Whether the file at `path` is exactly `bytes`: its length, then its content in pieces of 1 MiB.
    static func holds(_ path: String, exactly bytes: [UInt8]) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, Int(st.st_size) == bytes.count else { return false }
        var offset = 0
        while offset < bytes.count {
            let count = min(1 << 20, bytes.count - offset)
            guard let piece = FileRead.exactly(fd, count: count, at: offset),
                  piece.withUnsafeBytes({ p in bytes.withUnsafeBytes { memcmp(p.baseAddress!, $0.baseAddress! + offset, count) == 0 } })
            else { return false }
            offset += count
        }
        return true
    }

    /// The `StripedChecksum` of a file that should be `size` bytes long, read once in pieces; nil when it is not.
    static func checksum(ofFileAt path: String, size: Int) -> Int64? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return checksum(of: fd, size: size)
    }

    /// Whether an open file of `size` bytes matches `sum`.
    static func matches(_ fd: Int32, size: Int, _ sum: ValueSum) -> Bool {
        var running = sum.running(count: size)
        return feed(fd, size: size, to: &running) && running.matches(sum)
    }

    /// The `StripedChecksum` of an open file that should be `size` bytes long; nil when it is not.
    static func checksum(of fd: Int32, size: Int) -> Int64? {
        var running = ValueSum.Running.striped(StripedChecksum.Running(count: size))
        guard feed(fd, size: size, to: &running), case .striped(let sum) = running else { return nil }
        return Int64(bitPattern: sum.finish())
    }

    /// Reads an open file once, in pieces of 1 MiB, into `running`; false when it is not exactly `size` bytes long.
    /// `pread`, not a mapping: a file cut short under the daemon must be an error, not a SIGBUS.
    private static func feed(_ fd: Int32, size: Int, to running: inout ValueSum.Running) -> Bool {
        var offset = 0
        while offset < size {
            guard let piece = FileRead.exactly(fd, count: min(1 << 20, size - offset), at: offset) else { return false }
            running.add(piece)
            offset += piece.count
        }
        var extra: UInt8 = 0
        return pread(fd, &extra, 1, off_t(size)) == 0
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
