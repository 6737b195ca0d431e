#ifndef FERRY_CLIBUV_SHIM_H
#define FERRY_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/file.h>

/// The uid of the process at the other end of a connected Unix socket (SO_PEERCRED).
/// Returns 0 and sets *uid on success, -errno on failure. A C helper because `struct ucred`
/// needs _GNU_SOURCE, and defining that here would make this module's system headers disagree with Swift's Glibc
/// module; the kernel's layout {pid, uid, gid} is a stable ABI, so it is spelled out instead.
/// Elsewhere (Darwin, the BSDs) `getpeereid`. Linux is the platform built and tested.
#ifdef __linux__
struct ferry_ucred { pid_t pid; uid_t uid; gid_t gid; };
static inline int ferry_peer_uid(int fd, uid_t *uid) {
    struct ferry_ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *uid = cred.uid;
    return 0;
}
#else
#include <unistd.h>
static inline int ferry_peer_uid(int fd, uid_t *uid) {
    gid_t gid;
    return getpeereid(fd, uid, &gid) == 0 ? 0 : -1;
}
#endif

/// Whether the file system holding `path` keeps its files in memory (tmpfs or ramfs): 1, 0, or -errno (always 0
/// off Linux, where the magic numbers differ).
#ifdef __linux__
#include <sys/vfs.h>
static inline int ferry_fs_in_memory(const char *path) {
    struct statfs fs;
    if (statfs(path, &fs) != 0) return -1;
    return fs.f_type == 0x01021994 || fs.f_type == (typeof(fs.f_type))0x858458f6;
}
#else
static inline int ferry_fs_in_memory(const char *path) { (void)path; return 0; }
#endif
#endif
