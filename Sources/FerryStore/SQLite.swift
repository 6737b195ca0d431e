import CSQLite

/// A failed SQLite call: the result code and SQLite's message.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public var description: String { "SQLite error \(code): \(message)" }
    /// The disk (or the file system's quota) is full.
    public var isDiskFull: Bool { code & 0xFF == SQLITE_FULL }
    public var isReadOnly: Bool { code & 0xFF == SQLITE_READONLY || code & 0xFF == SQLITE_CANTOPEN || code & 0xFF == SQLITE_PERM }
    /// The store's error for this failure.
    public var storeError: StoreError {
        if isDiskFull { return .diskFull(message) }
        if isReadOnly { return .readOnly(message) }
        return .io("\(self)")
    }
    public var isCorrupt: Bool { code & 0xFF == SQLITE_CORRUPT || code & 0xFF == SQLITE_NOTADB }
}

/// One SQLite connection, used by one thread at a time. Small on purpose: the store needs prepare, bind, step,
/// columns and `exec`.
///
/// ```swift
/// let db = try SQLiteDatabase(path: "/tmp/x.db")
/// try db.exec("CREATE TABLE t(k BLOB PRIMARY KEY, v BLOB)")
/// let s = try db.prepare("INSERT INTO t VALUES (?, ?)")
/// try s.bind(1, Array("k".utf8)); try s.bind(2, [1, 2]); _ = try s.step()
/// ```
public final class SQLiteDatabase {
    let handle: OpaquePointer

    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: "\(path): \(message)")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { sqlite3_close_v2(handle) }

    func error(_ rc: Int32) -> SQLiteError { SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle))) }

    public func exec(_ sql: String) throws(SQLiteError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        if rc != SQLITE_OK { throw error(rc) }
    }

    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc) }
        return SQLiteStatement(db: self, stmt: stmt)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The single text or integer of a one-row query, e.g. `PRAGMA quick_check`.
    public func scalarText(_ sql: String) throws(SQLiteError) -> String? {
        let s = try prepare(sql)
        guard try s.step() else { return nil }
        return s.text(0)
    }
}

/// A prepared statement, reset and reused.
public final class SQLiteStatement {
    let db: SQLiteDatabase
    let stmt: OpaquePointer

    init(db: SQLiteDatabase, stmt: OpaquePointer) {
        self.db = db
        self.stmt = stmt
    }

    deinit { sqlite3_finalize(stmt) }

    /// Clears bindings and state so the statement can run again.
    public func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    public func bind(_ i: Int32, _ v: Int64?) throws(SQLiteError) {
        let rc = v.map { sqlite3_bind_int64(stmt, i, $0) } ?? sqlite3_bind_null(stmt, i)
        if rc != SQLITE_OK { throw db.error(rc) }
    }

    public func bind(_ i: Int32, _ bytes: [UInt8]?) throws(SQLiteError) {
        let rc: Int32
        if let bytes {
            rc = bytes.withUnsafeBytes { ferry_sqlite_bind_blob_copy(stmt, i, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count)) }
        } else {
            rc = sqlite3_bind_null(stmt, i)
        }
        if rc != SQLITE_OK { throw db.error(rc) }
    }

    /// Binds a string's UTF-8 bytes as a BLOB (keys are BLOBs so that they compare byte-wise), without the
    /// intermediate array.
    public func bind(_ i: Int32, utf8 text: String) throws(SQLiteError) {
        var text = text
        let rc = text.withUTF8 { ferry_sqlite_bind_blob_copy(stmt, i, UnsafeRawPointer($0.baseAddress) ?? UnsafeRawPointer(bitPattern: 1)!, Int32($0.count)) }
        if rc != SQLITE_OK { throw db.error(rc) }
    }

    public func bind(_ i: Int32, _ text: String?) throws(SQLiteError) {
        guard var text else {
            let rc = sqlite3_bind_null(stmt, i)
            if rc != SQLITE_OK { throw db.error(rc) }
            return
        }
        let rc = text.withUTF8 { ferry_sqlite_bind_text_copy(stmt, i, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), Int32($0.count)) }
        if rc != SQLITE_OK { throw db.error(rc) }
    }

    /// Runs one step: true when a row is available, false when done.
    public func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw db.error(rc)
    }

    public func isNull(_ col: Int32) -> Bool { sqlite3_column_type(stmt, col) == SQLITE_NULL }
    public func int(_ col: Int32) -> Int64 { sqlite3_column_int64(stmt, col) }
    public func optionalInt(_ col: Int32) -> Int64? { isNull(col) ? nil : int(col) }

    public func blob(_ col: Int32) -> [UInt8]? {
        guard !isNull(col) else { return nil }
        let n = Int(sqlite3_column_bytes(stmt, col))
        guard n > 0, let p = sqlite3_column_blob(stmt, col) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }

    public func text(_ col: Int32) -> String? {
        guard !isNull(col), let p = sqlite3_column_text(stmt, col) else { return nil }
        return String(cString: p)
    }
}
