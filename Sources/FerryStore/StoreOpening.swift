#if canImport(Glibc)
import Glibc
#endif
import CSQLite
import FerryCache

/// Start-up of the disk tier: open the index, check it, move a damaged one aside (the daemon then starts empty,
/// never in a crash loop), and reconcile rows with blob files.
enum StoreOpening {
    struct Opened {
        let engine: StoreEngine
        /// A line for the log when something had to be repaired.
        var notices: [String]
        /// Holds the directory's lock; closing it releases the directory.
        let lockFD: Int32
        /// Where the journal goes on: the first unused generation and sequence number.
        var journalGeneration: UInt64 = 1
        var nextSeq: UInt64 = 1
    }

    static func open(_ config: StoreConfig) throws(StoreError) -> Opened {
        try BlobFiles.makeDirectory(config.directory)
        try checkPrivate(config.directory)
        let lockFD = try lockDirectory(config.directory)
        var reserve = DiskReserve(directory: config.directory)
        do {
            do {
                return try openLocked(config, lockFD: lockFD, reserve: reserve, mayHold: true)
            } catch .diskFull(let why) where reserve.giveBackAny() {
                // A full disk (a clean stop left it so): the reserve's room lets the index open and the journal
                // replay; the store starts in full mode, serving reads and refusing new values until there is room.
                var opened = try openLocked(config, lockFD: lockFD, reserve: reserve, mayHold: false)
                opened.notices.append("CACHE DISK FULL at start (\(why)): gave back the \(reserve.size)-byte reserve; "
                                      + "serving reads and deletes, refusing new values until there is room")
                return opened
            }
        } catch {
            close(lockFD)
            throw error
        }
    }

    /// `mayHold` false: the reserve was just given back to open on a full disk; it stays given back (full mode).
    private static func openLocked(_ config: StoreConfig, lockFD: Int32, reserve: DiskReserve, mayHold: Bool) throws(StoreError) -> Opened {
        let path = config.directory + "/index.db"
        var notices: [String] = []
        let index: DiskIndex
        do {
            index = try openChecked(path, fsync: config.fsync)
        } catch where !error.isCorrupt {
            // Not damage: a directory we may not write, a full disk. Say so; moving files would not help.
            throw error.storeError
        } catch {
            let aside = "\(path).corrupt-\(time(nil))-\(getpid())"
            for suffix in ["", "-wal", "-shm"] { rename(path + suffix, aside + suffix) }
            notices.append("CACHE INDEX DAMAGED (\(error)); moved it to \(aside) and starting with an empty cache")
            do {
                index = try DiskIndex(path: path, fsync: config.fsync)
            } catch {
                throw .io("cannot create a new index at \(path): \(error)")
            }
        }
        // Index files made by an older ferryd (or a wider umask) are closed to other users too.
        for suffix in ["", "-wal", "-shm"] { chmod(path + suffix, 0o600) }
        let blobs = try BlobFiles(root: config.directory + "/blobs", syncWrites: config.fsync == .always)
        do {
            JournalSpares(directory: config.directory).removeAll()  // a killed daemon's: room for the reserve first
            let replayed = try replayJournals(in: config.directory, into: index)
            notices += replayed.notices
            notices += try reconcile(index, blobs)
            var reserve = reserve
            if reserve.isHeld && reserve.freeBytes() < reserve.size {
                // Started on a full disk: the reserve's room goes to the deletes that will free space.
                reserve.giveBack()
                notices.append("CACHE DISK FULL at start (\(reserve.freeBytes()) bytes free): gave back the \(reserve.size)-byte reserve; "
                               + "serving reads and deletes, refusing new values until there is room")
            } else if mayHold && !reserve.isHeld && !reserve.hold() {
                notices.append("CACHE DISK FULL: no room for the \(reserve.size)-byte reserve; refusing new values until there is room")
            }
            return Opened(engine: try StoreEngine(config: config, index: index, blobs: blobs, reserve: reserve), notices: notices,
                          lockFD: lockFD, journalGeneration: replayed.nextGeneration, nextSeq: replayed.nextSeq)
        } catch where error.isDiskFull {
            throw error.storeError
        } catch {
            throw .io("cannot read the index at \(path): \(error)")
        }
    }

    /// The cache holds every client's values and responses (tokens among them): its directory must be ours and
    /// closed to everyone else, or another user could read them, or swap files under the daemon.
    static func checkPrivate(_ dir: String) throws(StoreError) {
        var st = stat()
        guard stat(dir, &st) == 0 else { throw BlobFiles.failure("stat \(dir)") }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw .io("the cache directory \(dir) is not a directory") }
        guard st.st_uid == geteuid() else {
            throw .io("the cache directory \(dir) belongs to uid \(st.st_uid), not to ferryd's uid \(geteuid()); refusing to use it")
        }
        let mode = st.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw .io("the cache directory \(dir) has mode \(String(mode, radix: 8)), so other users can reach it; "
                      + "chmod 700 \(dir), or choose another --cache-dir")
        }
    }

    /// One daemon per cache directory, whatever sockets they serve: a second one would delete the first one's
    /// uncommitted blobs as orphans and double the disk budget. The lock is held until the store is closed.
    private static func lockDirectory(_ dir: String) throws(StoreError) -> Int32 {
        let path = dir + "/lock"
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw BlobFiles.failure("open \(path)") }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            throw .io("another ferryd uses the cache directory \(dir)")
        }
        return fd
    }

    /// Opens the index and runs SQLite's quick integrity check; any failure means "damaged".
    private static func openChecked(_ path: String, fsync: FsyncPolicy) throws(SQLiteError) -> DiskIndex {
        let index = try DiskIndex(path: path, fsync: fsync)
        let verdict = try index.db.scalarText("PRAGMA quick_check")
        guard verdict == "ok" else { throw SQLiteError(code: SQLITE_CORRUPT, message: "quick_check: \(verdict ?? "no answer")") }
        return index
    }

    /// Sets acknowledged through the journal but not yet in the index (the daemon was killed): into the index now,
    /// the newest record of each key (by sequence number), skipping records at or below the index's `applied_seq`
    /// (already applied, or superseded by later writes). Then the files are deleted.
    ///
    /// Every number read from disk is checked before any arithmetic (`Journal.isValidNumber`): a damaged
    /// `applied_seq`, a record's sequence number or a file's generation out of range is reported and passed over,
    /// never trusted, so no damaged file can stop the daemon from starting.
    private static func replayJournals(in directory: String, into index: DiskIndex) throws(SQLiteError)
        -> (notices: [String], nextGeneration: UInt64, nextSeq: UInt64) {
        var notices: [String] = []
        var files: [(generation: UInt64, path: String)] = []
        for file in Journal.files(in: directory) {
            if Journal.isValidNumber(file.generation) {
                files.append(file)
            } else {
                let aside = directory + "/damaged-" + (file.path.split(separator: "/").last.map(String.init) ?? "journal")
                rename(file.path, aside)
                notices.append("JOURNAL FILE \(file.path) has no valid generation number; moved it to \(aside) unread")
            }
        }
        var applied = try index.appliedSeq()
        if !Journal.isValidNumber(applied) && applied != 0 {
            // Replaying every record loses no acknowledged set; it may bring back a key deleted after its set.
            notices.append("CACHE INDEX applied_seq \(Int64(bitPattern: applied)) is not a valid sequence number; replaying every journal record")
            applied = 0
        }
        var lastSeq = applied
        var replayed = 0
        var invalid = 0
        if !files.isEmpty {
            // The newest record of each key only, written in the index's order: a key set 100,000 times since the
            // last apply (the journal holds up to `applyIntervalMs` of sets) is one row write, not 100,000.
            var newest: [CacheKey: JournalRecord] = [:]
            for file in files {
                for record in Journal.read(file.path) where record.seq > applied {
                    guard Journal.isValidNumber(record.seq) else {
                        invalid += 1
                        continue
                    }
                    if let kept = newest[record.key], kept.seq > record.seq { continue }
                    newest[record.key] = record
                    lastSeq = max(lastSeq, record.seq)
                    replayed += 1
                }
            }
            try index.begin()
            do throws(SQLiteError) {
                let keys = Array(newest.keys)
                for i in IndexOrder.positions(of: keys) {
                    let key = keys[i]
                    guard let entry = newest[key]?.entry else { continue }
                    try index.put(key, .inline(entry), accessedAt: entry.createdAt)
                }
                try index.setAppliedSeq(lastSeq)
                index.resetStatements()
                try index.commit()
            } catch {
                index.rollback()
                throw error
            }
            // On the disk before the journals go (a checkpoint syncs the WAL under `everysec`): else a power loss
            // soon after start-up could take both copies.
            index.checkpoint()
            for file in files { unlink(file.path) }
        }
        if replayed > 0 { notices.append("replayed \(replayed) journaled sets into the index") }
        if invalid > 0 { notices.append("JOURNAL: passed over \(invalid) records whose sequence number is out of range") }
        return (notices, (files.last?.generation ?? 0) + 1, lastSeq + 1)
    }

    /// Blob files no row points at are deleted; rows whose blob file is missing are deleted.
    private static func reconcile(_ index: DiskIndex, _ blobs: BlobFiles) throws(SQLiteError) -> [String] {
        let referenced = try index.referencedBlobs()
        let onDisk = Set(blobs.allHashes())
        var notices: [String] = []
        let orphans = onDisk.subtracting(referenced)
        for hash in orphans { blobs.remove(hash) }
        if !orphans.isEmpty { notices.append("removed \(orphans.count) blob files no entry points at") }
        var dropped = 0
        for hash in referenced.subtracting(onDisk) { dropped += try index.deleteRows(withBlob: hash) }
        if dropped > 0 { notices.append("removed \(dropped) entries whose blob file is missing") }
        return notices
    }
}
