#ifndef FERRY_REDIS_H
#define FERRY_REDIS_H
#include <stddef.h>

// A Redis connection on the daemon's libuv loop, through hiredis's asynchronous API (Debian libhiredis-dev) and a
// libuv adapter of our own (hiredis's hangs on a socket error, see ferry_redis.c). The hiredis types stay in
// ferry_redis.c: Swift sees an opaque handle, plain callbacks and a reply as a tree of `ferry_redis_value`. Loop
// thread only.

typedef struct ferry_redis ferry_redis;

enum {
    FERRY_REDIS_STRING = 1,   // a bulk string or a status ("OK")
    FERRY_REDIS_NIL = 2,
    FERRY_REDIS_INTEGER = 3,
    FERRY_REDIS_ERROR = 4,    // an error reply ("MOVED 3999 127.0.0.1:7002"), in str
    FERRY_REDIS_ARRAY = 5,    // `elements` values in `element`
    FERRY_REDIS_STATUS = 6,
};

typedef struct ferry_redis_value {
    int kind;
    const char *str;
    size_t len;
    long long integer;
    size_t elements;
    const struct ferry_redis_value *element;
} ferry_redis_value;

enum { FERRY_REDIS_CONNECTED = 1, FERRY_REDIS_CONNECT_FAILED = 2, FERRY_REDIS_DISCONNECTED = 3 };

/// `event` one of the above; `message` says why for a failure or a lost connection (NULL after a clean close).
typedef void (*ferry_redis_event_cb)(void *owner, int event, const char *message);
/// `value` NULL: no reply will come (the connection went away first).
typedef void (*ferry_redis_reply_cb)(void *owner, unsigned long long token, const ferry_redis_value *value);

/// Starts connecting (TCP when `path` is NULL, else a Unix socket); the outcome comes through `on_event`. NULL when
/// hiredis could not even start (its message in `error`, which has `error_len` bytes of room).
ferry_redis *ferry_redis_connect(void *uv_loop, const char *host, int port, const char *path,
                                 ferry_redis_event_cb on_event, ferry_redis_reply_cb on_reply, void *owner,
                                 char *error, size_t error_len);

/// Sends a command; its reply comes to `on_reply` with `token`. Nonzero when it could not be queued.
int ferry_redis_command(ferry_redis *r, int argc, const char **argv, const size_t *lens, unsigned long long token);

/// Closes the connection: replies still owed are answered with NULL, then FERRY_REDIS_DISCONNECTED, and the handle
/// is freed by hiredis (not to be used after this call).
void ferry_redis_close(ferry_redis *r);

#endif
