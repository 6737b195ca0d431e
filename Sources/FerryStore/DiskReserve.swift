#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Whether the store is in full mode, readable at once from the loop thread while the worker changes it: the
/// journal must stop taking values the moment the reserve is given back, not when the worker's batch outcome
/// arrives — in between, it would write them into the very room the reserve freed for deletes and applies.
final class FullModeSignal: Sendable {
    private let on = Atomic<Bool>(false)
    var isOn: Bool { on.load(ordering: .acquiring) }
    func set(_ value: Bool) { on.store(value, ordering: .releasing) }
}

/// Room kept on the cache's file system so that a full disk can still be emptied: a file of `size` bytes
/// (`reserve`, allocated for real with `posix_fallocate`) that the store gives back the moment a write finds the disk
/// full. The freed bytes let the deletes, clears and journal applies that free space commit (SQLite needs room in its
/// WAL even to delete); while the reserve is given back the store is in *full mode* and refuses new values, so they
/// cannot take that room again. It is taken back once the file system has room for it and a margin.
///
/// ```swift
/// var reserve = DiskReserve(directory: dir)
/// reserve.hold()                      // at start, when there is room
/// if writeFailedBecauseFull { reserve.giveBack() }   // then retry the write once
/// reserve.retakeIfRoom()              // at every sweep
/// ```
struct DiskReserve {
    let directory: String
    let path: String
    /// The reserve's size: 1/32 of the file system, between 256 KiB and 32 MiB. Not smaller on a large disk: pending
    /// journaled values are applied at a quarter of it (`StoreEngine.applyThresholdBytes`, at most 8 MiB), and at
    /// 16 MiB 64 KiB sets to 100 keys (6.4 MB) were applied every ~100 sets, a hot key written into SQLite each time.
    let size: Int
    /// Whether the file is in place. False: the store is in full mode.
    private(set) var isHeld = false {
        didSet { fullMode.set(!isHeld) }
    }
    /// `!isHeld`, for the loop thread.
    let fullMode = FullModeSignal()

    init(directory: String) {
        self.directory = directory
        path = directory + "/reserve"
        size = DiskReserve.size(forFileSystemOf: directory)
        var st = stat()
        isHeld = lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFREG && Int(st.st_size) == size
        fullMode.set(!isHeld)
    }

    static func size(forFileSystemOf directory: String) -> Int {
        var fs = statvfs()
        guard statvfs(directory, &fs) == 0 else { return 1 << 20 }
        let total = Int(fs.f_blocks) * Int(fs.f_frsize)
        return min(32 << 20, max(256 << 10, total / 32))
    }

    /// Bytes the file system still gives to an unprivileged writer.
    func freeBytes() -> Int { DiskReserve.freeBytes(in: directory) }

    static func freeBytes(in directory: String) -> Int {
        var fs = statvfs()
        guard statvfs(directory, &fs) == 0 else { return 0 }
        return Int(fs.f_bavail) * Int(fs.f_frsize)
    }

    /// Allocates the file (true when it is in place afterwards). Never follows a planted link.
    @discardableResult
    mutating func hold() -> Bool {
        guard !isHeld else { return true }
        unlink(path)  // a smaller one kept at a stop (`holdAtStop`): its room joins the whole reserve's
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard posix_fallocate(fd, 0, off_t(size)) == 0, ftruncate(fd, off_t(size)) == 0 else {
            unlink(path)  // a partial reserve would only take room
            return false
        }
        isHeld = true
        return true
    }

    /// At a clean stop: the reserve, or, when the disk has no room for all of it, the largest half, quarter, … of
    /// it (at least 64 KiB) that fits, so that the next start on a full disk has room to open the index in (its
    /// shared-memory file alone takes 32 KiB). A smaller file is not held (`isHeld` stays false): the next start
    /// gives it back (`giveBackAny`) if it must, or replaces it with the whole reserve.
    mutating func holdAtStop() {
        guard !hold() else { return }
        var bytes = size / 2
        while bytes >= 64 << 10 {
            let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { return }
            let placed = posix_fallocate(fd, 0, off_t(bytes)) == 0 && ftruncate(fd, off_t(bytes)) == 0
            close(fd)
            if placed { return }
            unlink(path)
            bytes /= 2
        }
    }

    /// Frees the reserve file whatever its size (a whole reserve, or what `holdAtStop` could keep); false when
    /// there was none.
    @discardableResult
    mutating func giveBackAny() -> Bool {
        if giveBack() { return true }
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return false }
        return unlink(path) == 0
    }

    /// Frees the reserve's bytes at once (the store enters full mode). False when it was not held.
    @discardableResult
    mutating func giveBack() -> Bool {
        guard isHeld else { return false }
        unlink(path)
        isHeld = false
        return true
    }

    /// Takes the reserve back when the file system has room for it twice over (so taking it does not fill the disk
    /// again at once); true when it is held afterwards.
    mutating func retakeIfRoom() -> Bool {
        guard !isHeld else { return true }
        guard freeBytes() >= 2 * size else { return false }
        return hold()
    }
}
