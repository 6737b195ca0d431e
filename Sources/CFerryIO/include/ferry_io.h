#ifndef FERRY_IO_H
#define FERRY_IO_H
// Descriptor passing and sealed memory for Ferry (PROTOCOL.md, "Bodies as descriptors"): the few calls Swift cannot
// make itself, because they need the CMSG_* macros, memfd_create's seals or copy_file_range, which Swift's Glibc
// module does not export. Every function returns -errno on failure and never leaves a descriptor behind on one.
#include <stddef.h>
#include <sys/types.h>

/// Sends up to `len` bytes of `buf` on the connected Unix stream socket `sock` with the descriptor `fd` attached
/// (SCM_RIGHTS) to the first of them. Non-blocking. Returns the bytes sent (> 0: the descriptor went with them),
/// 0 when the socket takes nothing now (nothing was sent, the descriptor neither), or -errno.
ssize_t ferry_send_with_fd(int sock, const void *buf, size_t len, int fd);

/// Receives like recv(2) into `buf` (`flags` as recv's: MSG_DONTWAIT), and the descriptors that came with those bytes into `fds` (close-on-exec; at
/// most `max_fds`, any beyond are closed), their number in `*nfds`, or -1 in `*nfds` when the kernel dropped some
/// (MSG_CTRUNC: the process is out of descriptors), after which the pairing of descriptors and frames is lost.
/// Returns the bytes read, 0 at end of stream, or -errno (-EINTR included: the caller retries).
ssize_t ferry_recv_with_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds, int flags);

/// A memory file (memfd) holding a copy of `len` bytes of `data`, sealed so that nobody (not the daemon, not a
/// client that reopens it through /proc) can write, grow or shrink it, or remove the seals: a reader sees these
/// bytes for as long as it holds the descriptor. Returns the descriptor (close-on-exec) or -errno.
int ferry_sealed_memfd(const char *name, const void *data, size_t len);

/// Copies `len` bytes of `in_fd` from `in_off` to `out_fd` at its file offset: copy_file_range(2) (in the kernel, a
/// reflink where the file system shares extents), then sendfile(2), then read/write where neither applies.
/// Returns 0, or -errno (-EIO when `in_fd` ends first).
int ferry_copy_fd_range(int in_fd, off_t in_off, int out_fd, size_t len);

/// A pipe whose ends never block and are closed on exec, both set atomically where the system can (pipe2: no
/// window in which another thread's fork and exec inherits them). Returns 0, or -1 with errno.
int ferry_wake_pipe(int fds[2]);

/// Asks the CPU to bring the cache line at `address` in for reading, without waiting for it (a hint: never faults,
/// whatever the address). The loop fetches the index buckets and slots of a whole iteration's keys this way before
/// it answers any of them, so that their cache misses overlap instead of following one another (`ReadBatch`).
static inline void ferry_prefetch(const void *address) { __builtin_prefetch(address, 0, 3); }

#endif
