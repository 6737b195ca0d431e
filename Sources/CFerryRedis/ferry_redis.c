#include "ferry_redis.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <pthread.h>
#include <time.h>
#include <uv.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>

struct ferry_redis {
    redisAsyncContext *ac;
    ferry_redis_event_cb on_event;
    ferry_redis_reply_cb on_reply;
    void *owner;
    int closing;
};

// The loop's side of a connection. hiredis's own libuv adapter (adapters/libuv.h, 0.14) returns from a poll
// callback whose status is an error without telling hiredis, and libuv reports exactly that when the socket holds a
// pending error: Redis killed while our commands sat unread in its buffer (ECONNRESET). The connection then hangs
// for good, never reported lost, never reconnected (seen: a Redis restarted after a SIGSTOP). Here such an event is
// handed to hiredis as readable: its read fails, it disconnects, and the disconnect callback reports the loss.
typedef struct {
    redisAsyncContext *ac;   // NULL once hiredis let go of it (cleanup)
    uv_poll_t poll;
    int events;
} ferry_uv;

// Writing to a Redis that died raises SIGPIPE, and SIGPIPE's default kills the whole process: ferryd ignores it, a
// program embedding this library (a test runner, say) may not. hiredis 0.14 writes with write(2), never
// send(MSG_NOSIGNAL), so its write is made with SIGPIPE blocked on this thread; a SIGPIPE the write left pending is
// taken back before the mask is restored (one that was pending before is left alone), and the write's EPIPE is
// what hiredis sees: the connection is lost, reported as any other loss. Skipped when SIGPIPE is ignored anyway.
static void ferry_uv_write_quietly(redisAsyncContext *ac) {
    struct sigaction now;
    if (sigaction(SIGPIPE, NULL, &now) == 0 && now.sa_handler == SIG_IGN) { redisAsyncHandleWrite(ac); return; }
    sigset_t pipe_only, old, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    redisAsyncHandleWrite(ac);
    if (!was_pending) {
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            const struct timespec none = {0, 0};
            sigtimedwait(&pipe_only, NULL, &none);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void ferry_uv_ready(uv_poll_t *handle, int status, int events) {
    ferry_uv *p = handle->data;
    if (status < 0) events = UV_READABLE;
    if (p->ac && (events & UV_READABLE)) redisAsyncHandleRead(p->ac);
    if (p->ac && (events & UV_WRITABLE)) ferry_uv_write_quietly(p->ac);
}

static void ferry_uv_watch(ferry_uv *p, int events) {
    p->events = events;
    if (events) uv_poll_start(&p->poll, events, ferry_uv_ready);
    else uv_poll_stop(&p->poll);
}

static void ferry_uv_add_read(void *data) { ferry_uv *p = data; ferry_uv_watch(p, p->events | UV_READABLE); }
static void ferry_uv_del_read(void *data) { ferry_uv *p = data; ferry_uv_watch(p, p->events & ~UV_READABLE); }
static void ferry_uv_add_write(void *data) { ferry_uv *p = data; ferry_uv_watch(p, p->events | UV_WRITABLE); }
static void ferry_uv_del_write(void *data) { ferry_uv *p = data; ferry_uv_watch(p, p->events & ~UV_WRITABLE); }
static void ferry_uv_free(uv_handle_t *handle) { free(handle->data); }

static void ferry_uv_cleanup(void *data) {
    ferry_uv *p = data;
    p->ac = NULL;
    uv_close((uv_handle_t *)&p->poll, ferry_uv_free);
}

static int ferry_uv_attach(redisAsyncContext *ac, uv_loop_t *loop) {
    if (ac->ev.data != NULL) return REDIS_ERR;
    ferry_uv *p = calloc(1, sizeof(*p));
    if (!p) return REDIS_ERR;
    if (uv_poll_init(loop, &p->poll, ac->c.fd) != 0) { free(p); return REDIS_ERR; }
    p->poll.data = p;
    p->ac = ac;
    ac->ev.data = p;
    ac->ev.addRead = ferry_uv_add_read;
    ac->ev.delRead = ferry_uv_del_read;
    ac->ev.addWrite = ferry_uv_add_write;
    ac->ev.delWrite = ferry_uv_del_write;
    ac->ev.cleanup = ferry_uv_cleanup;
    return REDIS_OK;
}

// hiredis's reply tree as ours (same shape, pointers into hiredis's reply, valid during the callback only).
static void convert(const redisReply *r, ferry_redis_value *out, ferry_redis_value *pool, size_t *used, size_t capacity) {
    memset(out, 0, sizeof(*out));
    switch (r->type) {
    case REDIS_REPLY_STRING: out->kind = FERRY_REDIS_STRING; out->str = r->str; out->len = r->len; break;
    case REDIS_REPLY_STATUS: out->kind = FERRY_REDIS_STATUS; out->str = r->str; out->len = r->len; break;
    case REDIS_REPLY_ERROR: out->kind = FERRY_REDIS_ERROR; out->str = r->str; out->len = r->len; break;
    case REDIS_REPLY_INTEGER: out->kind = FERRY_REDIS_INTEGER; out->integer = r->integer; break;
    case REDIS_REPLY_NIL: out->kind = FERRY_REDIS_NIL; break;
    case REDIS_REPLY_ARRAY:
        out->kind = FERRY_REDIS_ARRAY;
        if (*used + r->elements > capacity) { out->kind = FERRY_REDIS_ERROR; out->str = "ferry: reply too deep"; out->len = 21; break; }
        out->elements = r->elements;
        out->element = pool + *used;
        size_t base = *used;
        *used += r->elements;
        for (size_t i = 0; i < r->elements; i++) convert(r->element[i], pool + base + i, pool, used, capacity);
        break;
    default: out->kind = FERRY_REDIS_NIL; break;
    }
}

static size_t count_values(const redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY) return 0;
    size_t n = r->elements;
    for (size_t i = 0; i < r->elements; i++) n += count_values(r->element[i]);
    return n;
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata) {
    struct ferry_redis *f = ac->data;
    unsigned long long token = (unsigned long long)(uintptr_t)privdata;
    if (!f) return;
    if (!reply) { f->on_reply(f->owner, token, NULL); return; }
    const redisReply *r = reply;
    size_t capacity = count_values(r);
    ferry_redis_value *pool = capacity ? calloc(capacity, sizeof(ferry_redis_value)) : NULL;
    size_t used = 0;
    ferry_redis_value top;
    convert(r, &top, pool, &used, capacity);
    f->on_reply(f->owner, token, &top);
    free(pool);
}

static void on_connect(const redisAsyncContext *ac, int status) {
    struct ferry_redis *f = ac->data;
    if (!f) return;
    if (status == REDIS_OK) { f->on_event(f->owner, FERRY_REDIS_CONNECTED, NULL); return; }
    // hiredis frees the context after a failed connect (answering queued commands with NULL afterwards: they find
    // no handle, and the owner fails them itself on this event); the handle goes with it.
    f->on_event(f->owner, FERRY_REDIS_CONNECT_FAILED, ac->errstr);
    ((redisAsyncContext *)ac)->data = NULL;
    free(f);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
    struct ferry_redis *f = ac->data;
    if (!f) return;
    f->on_event(f->owner, FERRY_REDIS_DISCONNECTED, status == REDIS_OK ? NULL : ac->errstr);
    ((redisAsyncContext *)ac)->data = NULL;
    free(f);
}

ferry_redis *ferry_redis_connect(void *uv_loop, const char *host, int port, const char *path,
                                 ferry_redis_event_cb on_event, ferry_redis_reply_cb on_reply_cb, void *owner,
                                 char *error, size_t error_len) {
    if (!uv_loop || !on_event || !on_reply_cb || (!path && (!host || port <= 0 || port > 65535))) {
        snprintf(error, error_len, "bad arguments");
        return NULL;
    }
    redisAsyncContext *ac = path ? redisAsyncConnectUnix(path) : redisAsyncConnect(host, port);
    if (!ac) { snprintf(error, error_len, "out of memory"); return NULL; }
    if (ac->err) {
        snprintf(error, error_len, "%s", ac->errstr);
        redisAsyncFree(ac);
        return NULL;
    }
    struct ferry_redis *f = calloc(1, sizeof(*f));
    if (!f) { redisAsyncFree(ac); snprintf(error, error_len, "out of memory"); return NULL; }
    f->ac = ac;
    f->on_event = on_event;
    f->on_reply = on_reply_cb;
    f->owner = owner;
    ac->data = f;
    if (ferry_uv_attach(ac, (uv_loop_t *)uv_loop) != REDIS_OK) {
        snprintf(error, error_len, "cannot attach to the loop");
        ac->data = NULL;
        redisAsyncFree(ac);
        free(f);
        return NULL;
    }
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    return f;
}

int ferry_redis_command(ferry_redis *r, int argc, const char **argv, const size_t *lens, unsigned long long token) {
    if (!r || r->closing || argc <= 0) return -1;
    return redisAsyncCommandArgv(r->ac, on_reply, (void *)(uintptr_t)token, argc, argv, lens) == REDIS_OK ? 0 : -1;
}

void ferry_redis_close(ferry_redis *r) {
    if (!r || r->closing) return;
    r->closing = 1;
    redisAsyncDisconnect(r->ac);
}
