#if canImport(Glibc)
import Glibc
#endif
import CSQLite
import FerryCache

/// One row of the index: where a value lives and its times.
struct DiskRow: Sendable {
    var size: Int
    var createdAt: Int64
    var expiresAt: Int64?
    /// Small values live in the row itself; large ones in a blob file named by this hash.
    var inline: [UInt8]?
    var blob: String?
    /// What the value is checked against on every read (`ValueSum`); nil for rows written before the index had a
    /// checksum column.
    var sum: ValueSum?

    /// A small set's row, as the journal's apply and start-up's replay write it: the value inline, checksummed.
    static func inline(_ entry: CacheEntry) -> DiskRow {
        DiskRow(size: entry.value.count, createdAt: entry.createdAt, expiresAt: entry.expiresAt, inline: entry.value,
                blob: nil, sum: ValueSum.of(entry.value))
    }
}

/// The SQLite index (WAL mode) on one connection. The writer thread and the reader thread each own one.
///
/// Keys are stored as BLOBs so that order and equality are byte-wise; `accessed_at` drives the disk tier's LRU.
final class DiskIndex {
    let db: SQLiteDatabase
    /// Statements of fixed text, by the address of their literal: hashing the SQL text itself cost ~2,300
    /// instructions a lookup, a tenth of a whole row write.
    private var fixed: [UnsafeRawPointer: SQLiteStatement] = [:]
    /// Statements whose text is built at run time (`select(where:)`), by text.
    private var built: [String: SQLiteStatement] = [:]

    static let schema = """
        CREATE TABLE IF NOT EXISTS entries (
            namespace TEXT NOT NULL,
            key BLOB NOT NULL,
            size INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER,
            accessed_at INTEGER NOT NULL,
            inline_value BLOB,
            blob TEXT,
            checksum INTEGER,
            striped_checksum INTEGER,
            PRIMARY KEY (namespace, key)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS entries_accessed ON entries(accessed_at);
        CREATE INDEX IF NOT EXISTS entries_expires ON entries(expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX IF NOT EXISTS entries_blob ON entries(blob) WHERE blob IS NOT NULL;
        CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        """

    init(path: String, readOnly: Bool = false, fsync: FsyncPolicy = .everysec) throws(SQLiteError) {
        db = try SQLiteDatabase(path: path, readOnly: readOnly)
        // WAL: readers never block the writer. Every `synchronous` setting keeps a committed transaction when the
        // process is killed (it is in the OS cache and the WAL); what a power loss may cost is the `--fsync` policy's.
        if !readOnly {
            // Incremental auto-vacuum (takes effect only in a new database: before its first table): the pages deletes
            // free can be given back to the file system (`releaseFreePages`), which on a full disk is the room that
            // lets values in again.
            try db.exec("PRAGMA auto_vacuum=INCREMENTAL;")
            try db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=\(fsync.sqliteSynchronous);")
            // 8 MiB of page cache (the default is 2 MiB): enough for the key pages of a few hundred thousand
            // entries, so a set of a random key costs no page reads. Not more: values up to 64 KiB live in the rows,
            // and a larger cache fills with them, memory outside every budget (64 MiB of it was most of the excess
            // RSS in `make bench` row (g)); the OS page cache keeps them anyway.
            try db.exec("PRAGMA cache_size=-8192;")
            try db.exec(DiskIndex.schema)
            // An index made before values carried a checksum gets the column; its old rows stay unchecked.
            if try db.scalarText("SELECT COUNT(*) FROM pragma_table_info('entries') WHERE name='checksum'") == "0" {
                try db.exec("ALTER TABLE entries ADD COLUMN checksum INTEGER")
            }
            // And one made before values written by the store were summed with `StripedChecksum`: its rows keep
            // their `Checksum64` sums in `checksum`; new rows fill the new column instead.
            if try db.scalarText("SELECT COUNT(*) FROM pragma_table_info('entries') WHERE name='striped_checksum'") == "0" {
                try db.exec("ALTER TABLE entries ADD COLUMN striped_checksum INTEGER")
            }
        }
    }

    private func statement(_ sql: StaticString) throws(SQLiteError) -> SQLiteStatement {
        let address = UnsafeRawPointer(sql.utf8Start)
        if let s = fixed[address] {
            s.reset()
            return s
        }
        let s = try db.prepare("\(sql)")
        fixed[address] = s
        return s
    }

    private func statement(built sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let s = built[sql] {
            s.reset()
            return s
        }
        let s = try db.prepare(sql)
        built[sql] = s
        return s
    }

    /// Resets every cached statement: a statement left mid-result keeps a read transaction open, which stops the
    /// WAL from ever being rewound (it would grow for the daemon's whole life).
    func resetStatements() {
        for s in fixed.values { s.reset() }
        for s in built.values { s.reset() }
    }

    /// Whether a transaction is open (SQLite may roll one back by itself on some errors).
    var inTransaction: Bool { sqlite3_get_autocommit(db.handle) == 0 }

    func begin() throws(SQLiteError) { try db.exec("BEGIN IMMEDIATE") }

    /// `PRAGMA wal_checkpoint(TRUNCATE)`, outside any transaction; failures only delay it to the next sweep.
    func checkpoint() {
        resetStatements()
        try? db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
    }
    /// Gives the free pages of an incremental-vacuum database back to the file system (at the next checkpoint).
    func releaseFreePages() {
        resetStatements()
        try? db.exec("PRAGMA incremental_vacuum")
    }

    func commit() throws(SQLiteError) { try db.exec("COMMIT") }
    func rollback() { try? db.exec("ROLLBACK") }

    func get(_ key: CacheKey) throws(SQLiteError) -> DiskRow? {
        let s = try statement("SELECT size, created_at, expires_at, inline_value, blob, checksum, striped_checksum FROM entries WHERE namespace=? AND key=?")
        try s.bind(1, key.namespace)
        try s.bind(2, utf8: key.key)
        guard try s.step() else { return nil }
        return DiskRow(size: Int(s.int(0)), createdAt: s.int(1), expiresAt: s.optionalInt(2), inline: s.blob(3), blob: s.text(4),
                       sum: ValueSum(checksum: s.optionalInt(5), striped: s.optionalInt(6)))
    }

    /// Writes the row of `key`, replacing any. `INSERT OR REPLACE`: an upsert, which updates only the changed
    /// columns' indexes, measured 4 % more instructions a row here. With `replaced` before it, ~35,000 instructions
    /// a set row (callgrind), 39,000 with the full-row `get`.
    func put(_ key: CacheKey, _ row: DiskRow, accessedAt: Int64) throws(SQLiteError) {
        let s = try statement("""
            INSERT OR REPLACE INTO entries (namespace, key, size, created_at, expires_at, accessed_at, inline_value, blob, checksum,
                                            striped_checksum)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        try s.bind(1, key.namespace)
        try s.bind(2, utf8: key.key)
        try s.bind(3, Int64(row.size))
        try s.bind(4, row.createdAt)
        try s.bind(5, row.expiresAt)
        try s.bind(6, accessedAt)
        try s.bind(7, row.inline)
        try s.bind(8, row.blob)
        try s.bind(9, row.sum?.checksumColumn)
        try s.bind(10, row.sum?.stripedColumn)
        _ = try s.step()
    }

    /// What a write of `key` replaces, for the accounting: the old row's size and blob, nil when there is none.
    /// Reads only those two columns (the full row's inline value is a copy the write does not need).
    func replaced(_ key: CacheKey) throws(SQLiteError) -> (size: Int, blob: String?)? {
        let s = try statement("SELECT size, blob FROM entries WHERE namespace=? AND key=?")
        try s.bind(1, key.namespace)
        try s.bind(2, utf8: key.key)
        guard try s.step() else { return nil }
        return (Int(s.int(0)), s.text(1))
    }

    /// Deletes the row; returns it (for its size and blob) when it existed.
    func delete(_ key: CacheKey) throws(SQLiteError) -> DiskRow? {
        guard let row = try get(key) else { return nil }
        let s = try statement("DELETE FROM entries WHERE namespace=? AND key=?")
        try s.bind(1, key.namespace)
        try s.bind(2, utf8: key.key)
        _ = try s.step()
        return row
    }

    func touch(_ key: CacheKey, expiresAt: Int64?) throws(SQLiteError) -> Bool {
        let s = try statement("UPDATE entries SET expires_at=? WHERE namespace=? AND key=?")
        try s.bind(1, expiresAt)
        try s.bind(2, key.namespace)
        try s.bind(3, utf8: key.key)
        _ = try s.step()
        return db.changes > 0
    }

    /// The highest journal sequence number whose set is in the index (0: none): start-up replays only records
    /// above it.
    func appliedSeq() throws(SQLiteError) -> UInt64 {
        let s = try statement("SELECT value FROM meta WHERE name='applied_seq'")
        guard try s.step() else { return 0 }
        return UInt64(bitPattern: s.int(0))
    }

    func setAppliedSeq(_ seq: UInt64) throws(SQLiteError) {
        let s = try statement("INSERT OR REPLACE INTO meta (name, value) VALUES ('applied_seq', ?)")
        try s.bind(1, Int64(bitPattern: seq))
        _ = try s.step()
    }

    func setAccessed(_ key: CacheKey, at time: Int64) throws(SQLiteError) {
        let s = try statement("UPDATE entries SET accessed_at=? WHERE namespace=? AND key=? AND accessed_at<?")
        try s.bind(1, time)
        try s.bind(2, key.namespace)
        try s.bind(3, utf8: key.key)
        try s.bind(4, time)
        _ = try s.step()
    }

    /// Live keys of a namespace in byte order, after `cursor`, starting with `prefix`.
    func list(namespace: String, prefix: [UInt8], after cursor: [UInt8]?, limit: Int, now: Int64) throws(SQLiteError) -> [(key: [UInt8], size: Int, expiresAt: Int64?)] {
        let s = try statement("""
            SELECT key, size, expires_at FROM entries
            WHERE namespace=? AND key>=? AND (? IS NULL OR key>?) AND (? IS NULL OR key<?) AND substr(key, 1, ?)=?
              AND (expires_at IS NULL OR expires_at>?)
            ORDER BY key LIMIT ?
            """)
        try s.bind(1, namespace)
        try s.bind(2, prefix)
        try s.bind(3, cursor)
        try s.bind(4, cursor)
        // The first byte string after every key with this prefix (UTF-8 never holds 0xFF, so one exists), so the
        // index range ends where the prefix does instead of scanning the rest of the namespace.
        let end: [UInt8]? = prefix.isEmpty ? nil : prefix + [0xFF]
        try s.bind(5, end)
        try s.bind(6, end)
        try s.bind(7, Int64(prefix.count))
        try s.bind(8, prefix)
        try s.bind(9, now)
        try s.bind(10, Int64(limit))
        var out: [(key: [UInt8], size: Int, expiresAt: Int64?)] = []
        while try s.step() { out.append((s.blob(0) ?? [], Int(s.int(1)), s.optionalInt(2))) }
        return out
    }

    /// Rows chosen by `whereSQL` (with its bindings), oldest access first, at most `limit`: for clear, expiry and
    /// eviction, which all delete rows and then their unreferenced blobs.
    func select(where whereSQL: String, _ bind: (SQLiteStatement) throws(SQLiteError) -> Void, orderBy: String = "accessed_at", limit: Int) throws(SQLiteError) -> [(key: CacheKey, row: DiskRow)] {
        let s = try statement(built: "SELECT namespace, key, size, created_at, expires_at, blob FROM entries WHERE \(whereSQL) ORDER BY \(orderBy) LIMIT \(limit)")
        try bind(s)
        var out: [(key: CacheKey, row: DiskRow)] = []
        while try s.step() {
            let key = CacheKey(trusted: s.text(0) ?? "", String(decoding: s.blob(1) ?? [], as: UTF8.self))
            out.append((key, DiskRow(size: Int(s.int(2)), createdAt: s.int(3), expiresAt: s.optionalInt(4), inline: nil, blob: s.text(5))))
        }
        return out
    }

    func isBlobReferenced(_ hash: String) throws(SQLiteError) -> Bool {
        let s = try statement("SELECT 1 FROM entries WHERE blob=? LIMIT 1")
        try s.bind(1, hash)
        return try s.step()
    }

    func referencedBlobs() throws(SQLiteError) -> Set<String> {
        let s = try statement("SELECT DISTINCT blob FROM entries WHERE blob IS NOT NULL")
        var out = Set<String>()
        while try s.step() { if let h = s.text(0) { out.insert(h) } }
        return out
    }

    func deleteRows(withBlob hash: String) throws(SQLiteError) -> Int {
        let s = try statement("DELETE FROM entries WHERE blob=?")
        try s.bind(1, hash)
        _ = try s.step()
        return db.changes
    }

    /// Bytes the disk tier accounts for: every value plus a fixed per-row overhead (see `StoreConfig`).
    func totals(overheadPerRow: Int) throws(SQLiteError) -> (bytes: Int, rows: Int) {
        let s = try statement("SELECT COALESCE(SUM(size + length(key) + length(namespace)), 0), COUNT(*) FROM entries")
        guard try s.step() else { return (0, 0) }
        let rows = Int(s.int(1))
        return (Int(s.int(0)) + rows * overheadPerRow, rows)
    }
}
