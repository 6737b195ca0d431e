/*
 * rawpingpong: the physical-limit reference for ferry-bench.
 *
 * A Unix-socket server that answers every REQ_BYTES-byte message with a REPLY_BYTES-byte message, and a client that
 * measures round trips against it exactly as ferry-bench measures ferryd's `ping`: same socket type, same message
 * sizes (ferry-bench reports them as msg_bytes / reply_bytes), same load shapes, same warm-up, same percentile rule,
 * same RESULT line. The server does no parsing and no allocation at all, so what is left is the kernel: syscalls,
 * socket buffers and waking the other process. Ferry's numbers divided by these say what ferryd itself costs.
 *
 *   cc -O2 -o rawpingpong bench/rawpingpong.c
 *   rawpingpong server SOCKET REQ_BYTES REPLY_BYTES
 *   rawpingpong client SOCKET REQ_BYTES REPLY_BYTES MODE [SECONDS [N]]
 *
 * MODE: seq (1 connection, 1 in flight), pipelined (1 connection, N in flight, default 50) or conns (N connections,
 * default 50, 1 in flight each, one poll() loop). The server serves any number of connections with one epoll loop,
 * the mechanism ferryd's libuv loop uses; it runs until killed.
 *
 * ferry-seq, ferry-pipelined, ferry-conns: the same loads sent to ferryd itself, as real `ping` frames
 * ({"id":N,"op":"ping"}, ids of 7 digits as ferry-bench's, so every frame has REQ_BYTES bytes), each reply that
 * arrives whole in one read checked to be a pong (an error reply differs there). N at most 256 (ferryd's
 * max_in_flight). Why: the C echo and ferryd are then driven by the same client, whose own
 * cost (it runs at 100 % of its core at 50 connections) would otherwise differ between the two sides of a ratio.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 1024          /* send-time ring: more than any in-flight count */
#define IOBUF (64 * 1024)   /* one read's worth, as ferry-bench's 16+ KiB reads */

static size_t req_bytes, reply_bytes;
/* Whether the client sends ferryd `ping` frames (the ferry-* modes) instead of REQ_BYTES of 'q'. */
static int ferry_frames;

static void die(const char *what) { perror(what); exit(1); }

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct sockaddr_un address(const char *path) {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a.sun_path) { fprintf(stderr, "socket path too long: %s\n", path); exit(2); }
    strcpy(a.sun_path, path);
    return a;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("send");
        p += w;
        n -= (size_t)w;
    }
}

/* ---- server ------------------------------------------------------------------------------------------------ */

/* Answers each whole request with one reply; all the replies owed after one read go out in one write, as an event
 * loop that answers a batch of frames in one turn would. Bytes of a partial request wait for the next read. */
static void serve(const char *path) {
    struct sockaddr_un a = address(path);
    unlink(path);
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) die("socket");
    if (bind(listener, (struct sockaddr *)&a, sizeof a) != 0) die("bind");
    if (listen(listener, 1024) != 0) die("listen");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = listener};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev) != 0) die("epoll_ctl");

    static size_t partial[65536];             /* bytes of an unfinished request, by fd */
    char *in = malloc(IOBUF), *out = NULL;
    size_t out_cap = 0;
    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait");
        for (int k = 0; k < n; k++) {
            int fd = events[k].data.fd;
            if (fd == listener) {
                int c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0 || c >= 65536) { if (c >= 0) close(c); continue; }
                partial[c] = 0;
                struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
                epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
                continue;
            }
            ssize_t r = recv(fd, in, IOBUF, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL); close(fd); continue; }
            size_t total = partial[fd] + (size_t)r;
            size_t whole = total / req_bytes;
            partial[fd] = total % req_bytes;
            if (whole == 0) continue;
            if (whole * reply_bytes > out_cap) {
                out_cap = whole * reply_bytes;
                out = realloc(out, out_cap);
                memset(out, 'r', out_cap);
            }
            write_all(fd, out, whole * reply_bytes);
        }
    }
}

/* ---- client ------------------------------------------------------------------------------------------------ */

/* A ferryd ping frame for request `seq` of a connection: an 8-byte header (JSON length, body length; big-endian
 * 32-bit each), then {"id":N,"op":"ping"} with N = 1000000 + seq modulo 2^23 (7 digits, as ferry-bench's ids).
 * Outside the ferry-* modes, REQ_BYTES of 'q'. */
#define FIRST_ID 1000000u
#define ID_SPAN (1u << 23)

/* A frame without a body at `out`: the 8-byte header, then the `n` bytes of `json`. */
static void put_frame(char *out, const char *json, size_t n) {
    unsigned char h[8] = {n >> 24, n >> 16, n >> 8, n, 0, 0, 0, 0};
    memcpy(out, h, 8);
    memcpy(out + 8, json, n);
}

static void put_request(char *out, uint64_t seq) {
    if (!ferry_frames) { memset(out, 'q', req_bytes); return; }
    char json[64];
    int n = snprintf(json, sizeof json, "{\"id\":%u,\"op\":\"ping\"}", (unsigned)(FIRST_ID + (seq % ID_SPAN)));
    if ((size_t)n + 8 != req_bytes) { fprintf(stderr, "ping frame of %d bytes, not %zu\n", n + 8, req_bytes); exit(2); }
    put_frame(out, json, (size_t)n);
}

/* The tail every pong reply ends with; a reply whose bytes lie whole in one read is checked against it (an error
 * reply, or one for another operation, differs there), and one that fails ends the run. */
static const char pong_tail[] = ",\"final\":true,\"result\":{\"pong\":true}}";
static void check_replies(const char *in, size_t offset, size_t n) {
    if (!ferry_frames) return;
    size_t tail = sizeof pong_tail - 1;
    /* Only replies that start at `offset` and lie whole in [in, in + n). */
    for (size_t at = offset; at + reply_bytes <= n; at += reply_bytes) {
        if (memcmp(in + at + reply_bytes - tail, pong_tail, tail) != 0 || memcmp(in + at + 8, "{\"id\":", 6) != 0) {
            fprintf(stderr, "ferryd answered something other than a pong: %.*s\n", (int)(reply_bytes - 8), in + at + 8);
            exit(1);
        }
    }
}

struct samples { uint64_t *v; size_t n, cap; };

static void record(struct samples *s, uint64_t ns) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1 << 18;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) die("realloc");
    }
    s->v[s->n++] = ns;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank, index ceil(p*n)-1: the rule ferry-bench uses. */
static double percentile_us(const struct samples *s, double p) {
    if (s->n == 0) return 0;
    size_t idx = (size_t)(p * (double)s->n + 0.999999999);
    if (idx > 0) idx--;
    if (idx >= s->n) idx = s->n - 1;
    return (double)s->v[idx] / 1000.0;
}

/* Reads exactly n bytes. */
static void read_all(int fd, char *p, size_t n) {
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die("recv");
        p += r;
        n -= (size_t)r;
    }
}

/* ferryd answers nothing before `hello` (PROTOCOL.md): each connection of a ferry-* mode says it, unmeasured, and
 * reads its reply whole (its length from the header). */
static void hello(int fd) {
    static const char json[] = "{\"id\":1,\"op\":\"hello\",\"args\":{\"versions\":[1],\"client\":\"rawpingpong\"}}";
    char frame[8 + sizeof json - 1];
    put_frame(frame, json, sizeof json - 1);
    write_all(fd, frame, sizeof frame);
    unsigned char rh[8];
    read_all(fd, (char *)rh, 8);
    size_t rest = ((size_t)rh[0] << 24 | (size_t)rh[1] << 16 | (size_t)rh[2] << 8 | rh[3])
                + ((size_t)rh[4] << 24 | (size_t)rh[5] << 16 | (size_t)rh[6] << 8 | rh[7]);
    if (rest > 65536) { fprintf(stderr, "hello reply of %zu bytes\n", rest); exit(1); }
    char *reply = malloc(rest + 1);
    if (!reply) die("malloc");
    read_all(fd, reply, rest);
    reply[rest] = 0;
    if (!strstr(reply, "\"final\":true,\"result\"")) { fprintf(stderr, "hello failed: %s\n", reply); exit(1); }
    free(reply);
}

static int dial(const char *path) {
    struct sockaddr_un a = address(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) die("connect");
    if (ferry_frames) hello(fd);
    return fd;
}

/* The budget: issue requests until the deadline, then drain what is in flight (as ferry-bench does). */
struct run { uint64_t start, deadline, issued, completed, end; struct samples lat; };

static void begin(struct run *r, double seconds) {
    memset(r, 0, sizeof *r);
    r->start = now_ns();
    r->deadline = r->start + (uint64_t)(seconds * 1e9);
}

static int more(const struct run *r) { return now_ns() < r->deadline; }

static void run_seq(const char *path, struct run *r, double seconds) {
    int fd = dial(path);
    char *msg = malloc(req_bytes), *in = malloc(IOBUF);
    begin(r, seconds);
    while (more(r)) {
        put_request(msg, r->issued);
        uint64_t t0 = now_ns();
        write_all(fd, msg, req_bytes);
        size_t got = 0;
        while (got < reply_bytes) {
            ssize_t n = recv(fd, in, IOBUF, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) die("recv");
            if (got == 0) check_replies(in, 0, (size_t)n);
            got += (size_t)n;
        }
        record(&r->lat, now_ns() - t0);
        r->issued++;
        r->completed++;
    }
    r->end = now_ns();
    close(fd);
    free(msg);
    free(in);
}

/* Keeps `depth` requests outstanding; the refills owed after one read go out in one write (as ferry-bench). */
static void run_pipelined(const char *path, struct run *r, double seconds, int depth) {
    int fd = dial(path);
    char *batch = malloc(req_bytes * (size_t)depth), *in = malloc(IOBUF);
    uint64_t sent_at[SLOTS];
    size_t leftover = 0;
    begin(r, seconds);
    int k = 0;
    for (; k < depth && more(r); k++) {
        put_request(batch + req_bytes * (size_t)k, r->issued);
        sent_at[r->issued++ % SLOTS] = now_ns();
    }
    write_all(fd, batch, req_bytes * (size_t)k);
    while (r->completed < r->issued) {
        ssize_t n = recv(fd, in, IOBUF, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("recv");
        /* The first reply starting in this read starts where the last read's partial one ends. */
        check_replies(in, leftover == 0 ? 0 : reply_bytes - leftover, (size_t)n);
        size_t total = leftover + (size_t)n, answered = total / reply_bytes;
        leftover = total % reply_bytes;
        uint64_t t = now_ns();
        for (size_t j = 0; j < answered; j++) record(&r->lat, t - sent_at[r->completed++ % SLOTS]);
        for (k = 0; k < (int)answered && more(r); k++) {
            put_request(batch + req_bytes * (size_t)k, r->issued);
            sent_at[r->issued++ % SLOTS] = now_ns();
        }
        if (k > 0) write_all(fd, batch, req_bytes * (size_t)k);
    }
    r->end = now_ns();
    close(fd);
    free(batch);
    free(in);
}

/* `conns` connections, one request in flight each, one poll() loop: ferry-bench's raw-conns driver. */
static void run_conns(const char *path, struct run *r, double seconds, int conns) {
    struct pollfd *pfd = calloc((size_t)conns, sizeof *pfd);
    uint64_t *sent_at = calloc((size_t)conns, sizeof *sent_at);
    size_t *got = calloc((size_t)conns, sizeof *got);
    uint64_t *sent = calloc((size_t)conns, sizeof *sent);   /* requests sent on each connection: the next id */
    char *msg = malloc(req_bytes), *in = malloc(IOBUF);
    for (int c = 0; c < conns; c++) pfd[c] = (struct pollfd){.fd = dial(path), .events = POLLIN};
    begin(r, seconds);
    for (int c = 0; c < conns && more(r); c++) {
        put_request(msg, sent[c]++);
        sent_at[c] = now_ns();
        write_all(pfd[c].fd, msg, req_bytes);
        r->issued++;
    }
    while (r->completed < r->issued) {
        int ready = poll(pfd, (nfds_t)conns, -1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) die("poll");
        for (int c = 0; c < conns; c++) {
            if (!pfd[c].revents) continue;
            ssize_t n = recv(pfd[c].fd, in, IOBUF, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) die("recv");
            if (got[c] == 0) check_replies(in, 0, (size_t)n);
            got[c] += (size_t)n;
            if (got[c] < reply_bytes) continue;
            got[c] -= reply_bytes;
            record(&r->lat, now_ns() - sent_at[c]);
            r->completed++;
            if (more(r)) {
                put_request(msg, sent[c]++);
                sent_at[c] = now_ns();
                write_all(pfd[c].fd, msg, req_bytes);
                r->issued++;
            }
        }
    }
    r->end = now_ns();
    for (int c = 0; c < conns; c++) close(pfd[c].fd);
    free(pfd); free(sent_at); free(got); free(sent); free(msg); free(in);
}

static void measure(const char *path, const char *mode, struct run *r, double seconds, int n) {
    if (strncmp(mode, "ferry-", 6) == 0) mode += 6;   /* ferry_frames is set by `client` */
    if (strcmp(mode, "seq") == 0) run_seq(path, r, seconds);
    else if (strcmp(mode, "pipelined") == 0) run_pipelined(path, r, seconds, n);
    else if (strcmp(mode, "conns") == 0) run_conns(path, r, seconds, n);
    else { fprintf(stderr, "unknown mode %s ([ferry-]seq, pipelined, conns)\n", mode); exit(2); }
}

static int client(const char *path, const char *mode, double seconds, int n) {
    struct run warm, r;
    ferry_frames = strncmp(mode, "ferry-", 6) == 0;
    if (ferry_frames && (reply_bytes < 8 + 6 + sizeof pong_tail - 1 || n > 256)) {
        fprintf(stderr, "ferry modes: replies of at least %zu bytes, at most 256 in flight\n", 8 + 6 + sizeof pong_tail - 1);
        exit(2);
    }
    measure(path, mode, &warm, 0.5, n);        /* thrown away, as ferry-bench's --warmup */
    free(warm.lat.v);
    measure(path, mode, &r, seconds, n);
    qsort(r.lat.v, r.lat.n, sizeof *r.lat.v, cmp_u64);
    double secs = (double)(r.end - r.start) / 1e9;
    const char *shape = ferry_frames ? mode + 6 : mode;
    int conns = strcmp(shape, "conns") == 0 ? n : 1;
    int in_flight = strcmp(shape, "pipelined") == 0 ? n : 1;
    double ops = (double)r.completed / secs, p50 = percentile_us(&r.lat, 0.50), p99 = percentile_us(&r.lat, 0.99);
    printf("RESULT mode=c-%s ops_per_s=%.0f p50_us=%.1f p99_us=%.1f msg_bytes=%zu reply_bytes=%zu conns=%d "
           "in_flight=%d requests=%llu seconds=%.3f\n",
           mode, ops, p50, p99, req_bytes, reply_bytes, conns, in_flight, (unsigned long long)r.completed, secs);
    printf("# c-%-16s %10.0f req/s   p50 %.1f us   p99 %.1f us   (%d conn%s x %d in flight, %zu B -> %zu B)\n",
           mode, ops, p50, p99, conns, conns == 1 ? "" : "s", in_flight, req_bytes, reply_bytes);
    free(r.lat.v);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && strcmp(argv[1], "server") == 0) {
        req_bytes = strtoul(argv[3], NULL, 10);
        reply_bytes = strtoul(argv[4], NULL, 10);
        if (req_bytes == 0 || reply_bytes == 0) { fprintf(stderr, "sizes must be positive\n"); return 2; }
        serve(argv[2]);
    } else if (argc >= 6 && strcmp(argv[1], "client") == 0) {
        req_bytes = strtoul(argv[3], NULL, 10);
        reply_bytes = strtoul(argv[4], NULL, 10);
        double seconds = argc > 6 ? strtod(argv[6], NULL) : 3.0;
        int n = argc > 7 ? atoi(argv[7]) : 50;
        if (req_bytes == 0 || reply_bytes == 0 || seconds <= 0 || n < 1 || n > SLOTS) {
            fprintf(stderr, "sizes and seconds must be positive, N from 1 to %d\n", SLOTS);
            return 2;
        }
        return client(argv[2], argv[5], seconds, n);
    }
    fprintf(stderr, "usage: %s server SOCKET REQ_BYTES REPLY_BYTES\n"
                    "       %s client SOCKET REQ_BYTES REPLY_BYTES [ferry-]seq|pipelined|conns [SECONDS [N]]\n",
            argv[0], argv[0]);
    return 2;
}
