/// How far the journal may run ahead of the index: when the active journal file is sealed early, and how many
/// journaled bytes may wait unapplied, by what the loop last saw of the file system's free space (looked at once per
/// half disk reserve journaled, and at every sweep) and by the daemon's buffer limit. The loop's `DiskTier` asks
/// `admits` for every small set; a set it refuses goes to the worker like one that is not journaled, which applies
/// what is pending first (the client waits for the disk, or hears `busy`). And when sealed files are applied at once
/// rather than at the next sweep (`appliesSealed`).
///
/// ```swift
/// var room = JournalRoom(reserveSize: 16 << 20, bufferLimit: 64 << 20, free: { DiskReserve.freeBytes(in: dir) })
/// if journalBytes >= room.nextLookAt && room.look(journalBytes: journalBytes) { /* short: seal the file now */ }
/// room.admits(unappliedOnDisk: 1_000, heldInMemory: 1_000, size: 100)   // true on a disk with room
/// ```
struct JournalRoom {
    /// The active journal file is sealed and a new one started at 32 MiB, and at every apply by a sweep; sooner — at
    /// half the disk reserve — when the file system is short of room (free space under four reserves), because a
    /// sealed file's records, once applied, are on the disk twice until the file is retired: on a disk that fills
    /// within a second the journal held every value twice, and the room the reserve freed was not enough to apply
    /// what was pending (FullDiskTests). Not always that soon: each retirement folds the WAL back, and at 64 KiB
    /// sets a rotation every 8 MiB halved their rate.
    static let rotateBytes = 32 * 1024 * 1024
    let rotateWhenShortBytes: Int
    /// The reserve's size, read once at start (the reserve itself is the worker's).
    private let reserveSize: Int
    /// The journal's size at which free space is looked at next (`statvfs`, once per half reserve written).
    private(set) var nextLookAt: Int
    /// While the file system is short of room, journaled bytes not yet applied to the index (handed off or not) may
    /// reach this much, half the disk reserve. The loop acknowledges journaled sets faster than the worker applies
    /// them, and on a full disk every pending byte must still find room. Not always: the limit sent 64 KiB sets to
    /// the worker often enough to take their p99 from 5 to 30 ms.
    private let shortLimit: Int
    /// Journaled bytes not yet applied may reach this much: `shortLimit` while short of room, else a third of the
    /// free space as of the last look (applying them takes about twice their size, in the WAL and then the database,
    /// while the journal still holds them once). Why: with the worker starved of CPU, the loop journaled 4 MB on an
    /// 8 MiB disk before free space fell under four reserves, more than could ever be applied, and a touch on the
    /// full disk then failed (FullDiskTests, 3 runs in 10 with both cores busy). On a disk with room it is far above
    /// anything the worker holds.
    private var unappliedLimit: Int
    /// And never more than the daemon's buffer limit (`--buffer-limit`: bytes in transit, values waiting for the disk
    /// among them), whatever the disk's room: journaled values are held in memory until applied, and a client writing
    /// distinct keys faster than SQLite takes them grew the daemon without bound (1 KB sets to a million keys:
    /// 1.27 GB resident after 20 s at the default 256 MiB memory limit).
    private let memoryLimit: Int
    /// The file system's free bytes (`DiskReserve.freeBytes` of the cache directory; a test's numbers).
    private let free: () -> Int

    init(reserveSize: Int, bufferLimit: Int, free: @escaping () -> Int) {
        self.reserveSize = reserveSize
        self.free = free
        rotateWhenShortBytes = min(JournalRoom.rotateBytes, max(64 * 1024, reserveSize / 2))
        nextLookAt = rotateWhenShortBytes
        shortLimit = reserveSize / 2
        unappliedLimit = free() / 3
        memoryLimit = bufferLimit
    }

    /// Looks at free space now; true when the file system has less than four disk reserves free.
    mutating func look(journalBytes: Int) -> Bool {
        nextLookAt = journalBytes + rotateWhenShortBytes
        let bytes = free()
        let short = bytes < 4 * reserveSize
        unappliedLimit = short ? shortLimit : bytes / 3
        return short
    }

    /// A new journal file was started.
    mutating func rotated() { nextLookAt = rotateWhenShortBytes }

    /// Sealed journal files may wait on disk for the next apply (`StoreConfig.applyIntervalMs`) up to this many bytes,
    /// Redis's smallest AOF rewrite size twice over. Why wait: an apply writes every pending value into SQLite's WAL
    /// and again into the database, and a file sealed every 32 MiB applied at once wrote a hot key's value that often
    /// (64 KiB sets to 100 keys: the disk worker wrote as much as the journal did, and synced 17 times a second).
    static let sealedBytesLimit = 128 * 1024 * 1024

    /// Whether journal files holding `sealedBytes` (the one sealed now included) are applied and deleted now:
    /// at `sealedBytesLimit`, or at half of what may wait unapplied on this disk, whichever comes first (while short
    /// of room, every time).
    func appliesSealed(_ sealedBytes: Int) -> Bool {
        sealedBytes >= min(JournalRoom.sealedBytesLimit, unappliedLimit / 2)
    }

    /// Whether a set of `size` value bytes may be journaled, given the journaled bytes the index does not have yet
    /// (on disk, every record until applied) and those held in memory for them (`JournalBacklog`'s count).
    func admits(unappliedOnDisk: Int, heldInMemory: Int, size: Int) -> Bool {
        unappliedOnDisk + size <= unappliedLimit && heldInMemory + size <= memoryLimit
    }
}
