#define _GNU_SOURCE
#include "ferry_io.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

// Platform differences, all here: Linux is built and tested. Elsewhere (Darwin) there is no MSG_NOSIGNAL (the
// client sets SO_NOSIGPIPE on its socket), no MSG_CMSG_CLOEXEC (received descriptors get FD_CLOEXEC after the
// call), no sealed memfd (ferry_sealed_memfd fails with ENOSYS and the daemon sends the bytes instead), and
// copies go through read/write.
#ifdef __linux__
#include <sys/sendfile.h>
#define FERRY_HAVE_LINUX_COPIES 1
#else
#define FERRY_HAVE_LINUX_COPIES 0
#endif
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif
#ifndef MSG_CMSG_CLOEXEC
#define MSG_CMSG_CLOEXEC 0
#define FERRY_CLOEXEC_AFTER 1
#else
#define FERRY_CLOEXEC_AFTER 0
#endif

ssize_t ferry_send_with_fd(int sock, const void *buf, size_t len, int fd) {
    if (sock < 0 || fd < 0 || buf == NULL || len == 0) return -EINVAL;
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    union { char bytes[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof(control));
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.bytes,
                          .msg_controllen = sizeof(control.bytes) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    for (;;) {
        ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        return -errno;
    }
}

ssize_t ferry_recv_with_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds, int flags) {
    *nfds = 0;
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    // Room for 16 descriptors: the daemon attaches one per reply frame, and one recvmsg never returns the
    // descriptors of two sends of a stream socket, so more than one never arrives at once.
    union { char bytes[CMSG_SPACE(16 * sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.bytes,
                          .msg_controllen = sizeof(control.bytes) };
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
    if (n < 0) return -errno;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (FERRY_CLOEXEC_AFTER) fcntl(fd, F_SETFD, FD_CLOEXEC);
            if (*nfds < max_fds) fds[(*nfds)++] = fd; else close(fd);
        }
    }
    if (msg.msg_flags & MSG_CTRUNC) {
        for (int i = 0; i < *nfds; i++) close(fds[i]);
        *nfds = -1;
    }
    return n;
}

int ferry_sealed_memfd(const char *name, const void *data, size_t len) {
#if !FERRY_HAVE_LINUX_COPIES
    (void)name; (void)data; (void)len;
    return -ENOSYS;
#else
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -errno;
    // Sized first, so the pages are allocated in one go and a short write cannot leave a hole.
    if (ftruncate(fd, (off_t)len) != 0) goto fail;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)data + done, len - done, (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { if (n == 0) errno = EIO; goto fail; }
        done += (size_t)n;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) goto fail;
    return fd;
fail:;
    int e = errno;
    close(fd);
    return -e;
#endif
}

int ferry_copy_fd_range(int in_fd, off_t in_off, int out_fd, size_t len) {
    off_t off = in_off;
    size_t left = len;
    int mode = FERRY_HAVE_LINUX_COPIES ? 0 : 2;  // 0: copy_file_range, 1: sendfile, 2: read/write
    char buf[65536];
    while (left > 0) {
        ssize_t n;
        if (mode < 2) {
#if FERRY_HAVE_LINUX_COPIES
          if (mode == 0) {
            n = copy_file_range(in_fd, &off, out_fd, NULL, left, 0);
            // Not for this pair of files (another file system on an old kernel, a pipe, a terminal): fall back.
            if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF)) { mode = 1; continue; }
          } else {
            n = sendfile(out_fd, in_fd, &off, left);
            if (n < 0 && (errno == EINVAL || errno == ENOSYS)) { mode = 2; continue; }
          }
#else
            n = 0;
#endif
        } else {
            n = pread(in_fd, buf, left < sizeof(buf) ? left : sizeof(buf), off);
            if (n > 0) {
                ssize_t w = 0;
                while (w < n) {
                    ssize_t m = write(out_fd, buf + w, (size_t)(n - w));
                    if (m < 0 && errno == EINTR) continue;
                    if (m <= 0) return m == 0 ? -EIO : -errno;
                    w += m;
                }
                off += n;
            }
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -errno;
        if (n == 0) return -EIO;
        left -= (size_t)n;
    }
    return 0;
}

int ferry_wake_pipe(int fds[2]) {
#ifdef __linux__
    return pipe2(fds, O_CLOEXEC | O_NONBLOCK);
#else
    if (pipe(fds) != 0) return -1;
    for (int k = 0; k < 2; k++) {
        fcntl(fds[k], F_SETFD, FD_CLOEXEC);
        fcntl(fds[k], F_SETFL, fcntl(fds[k], F_GETFL) | O_NONBLOCK);
    }
    return 0;
#endif
}
