import CLibUV

/// Whether a directory's file system keeps its files in memory (tmpfs, ramfs, as `$XDG_RUNTIME_DIR` is): what the
/// daemon writes there never reaches a disk (the key of credential partitions lives only in such a place).
///
/// ```swift
/// MemoryFileSystem.holds("/run/user/1000")   // true on a systemd machine
/// MemoryFileSystem.holds("/var/tmp")         // false
/// ```
public enum MemoryFileSystem {
    public static func holds(_ path: String) -> Bool { ferry_fs_in_memory(path) == 1 }
}
