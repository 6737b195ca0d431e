#ifndef FERRY_CSQLITE_SHIM_H
#define FERRY_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import: bind with a copy.
static inline int ferry_sqlite_bind_blob_copy(sqlite3_stmt *s, int i, const void *p, int n) {
    return sqlite3_bind_blob(s, i, p, n, SQLITE_TRANSIENT);
}
static inline int ferry_sqlite_bind_text_copy(sqlite3_stmt *s, int i, const char *p, int n) {
    return sqlite3_bind_text(s, i, p, n, SQLITE_TRANSIENT);
}
#endif
