/// Why the store could not do what was asked. Each case maps to one protocol error code.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The value exceeds the configured maximum → `resource_exhausted`, nothing stored.
    case valueTooLarge(size: Int, limit: Int)
    /// The disk (or the disk budget) cannot take the value → `resource_exhausted`.
    case diskFull(String)
    /// The value is larger than the whole disk budget (`--disk-limit`) → `resource_exhausted`.
    case overDiskBudget(String)
    /// The cache directory cannot be written (a read-only file system or permissions) → `unavailable`.
    case readOnly(String)
    /// The process has no descriptor left (EMFILE, ENFILE) → `resource_exhausted`: a load, not a bug.
    case tooManyFiles(String)
    /// The daemon's buffer budget cannot hold the value while it waits for the disk → `resource_exhausted`: a load
    /// to retry, not a full disk.
    case busy(String)
    /// An I/O or SQLite failure that is not the caller's fault → `internal`.
    case io(String)

    public var description: String {
        switch self {
        case .valueTooLarge(let size, let limit): return "value of \(size) bytes exceeds the limit of \(limit)"
        case .diskFull(let m): return "the cache disk is full: \(m)"
        case .readOnly(let m): return "the cache directory is not writable: \(m)"
        case .tooManyFiles(let m): return "ferryd has too many files open: \(m)"
        case .busy(let m): return m
        case .overDiskBudget(let m): return m
        case .io(let m): return m
        }
    }
}
