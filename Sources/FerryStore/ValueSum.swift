import FerryBytes

/// What a stored value is checked against on every read, and which checksum made it: `StripedChecksum` for the
/// values the store writes itself and for adopted files (a fetched body, summed by the spooler as it was written;
/// four lanes: about four times faster than one), `Checksum64` for the rows written before it. Why two: at 1 MB sets the
/// one-lane sum was a fifth of the disk worker's time (perf, issue 12), and rows already on disk keep the sum they
/// were written with.
///
/// ```swift
/// let sum = ValueSum.of(value)              // .striped(…)
/// sum.matches(value)                        // true
/// var running = sum.running(count: value.count)
/// running.add(piece)                        // pieces: multiples of 32 bytes, but the last
/// running.matches(sum)                      // once every piece is in
/// ```
enum ValueSum: Sendable, Equatable {
    /// `Checksum64`, as SQLite's signed integer (column `checksum`).
    case word(Int64)
    /// `StripedChecksum`, as SQLite's signed integer (column `striped_checksum`).
    case striped(Int64)

    /// The sum a value the store writes gets.
    static func of(_ value: [UInt8]) -> ValueSum {
        .striped(Int64(bitPattern: value.withUnsafeBytes { StripedChecksum.of($0) }))
    }

    /// From the index's two columns (a row has one of them at most; none before checksums were kept).
    init?(checksum: Int64?, striped: Int64?) {
        if let striped { self = .striped(striped) } else if let checksum { self = .word(checksum) } else { return nil }
    }

    var checksumColumn: Int64? { if case .word(let v) = self { v } else { nil } }
    var stripedColumn: Int64? { if case .striped(let v) = self { v } else { nil } }

    func matches(_ value: [UInt8]) -> Bool {
        switch self {
        case .word(let v): return Int64(bitPattern: Checksum64.of(value)) == v
        case .striped(let v): return Int64(bitPattern: value.withUnsafeBytes { StripedChecksum.of($0) }) == v
        }
    }

    func running(count: Int) -> Running {
        switch self {
        case .word: return .word(Checksum64.Running(count: count))
        case .striped: return .striped(StripedChecksum.Running(count: count))
        }
    }

    /// The sum of a value read in pieces: every piece but the last a multiple of 32 bytes (which suits both).
    enum Running: Sendable {
        case word(Checksum64.Running)
        case striped(StripedChecksum.Running)

        mutating func add(_ piece: [UInt8]) {
            switch self {
            case .word(var r):
                r.add(piece)
                self = .word(r)
            case .striped(var r):
                r.add(piece)
                self = .striped(r)
            }
        }

        func matches(_ sum: ValueSum) -> Bool {
            switch (self, sum) {
            case (.word(let r), .word(let v)): return Int64(bitPattern: r.finish()) == v
            case (.striped(let r), .striped(let v)): return Int64(bitPattern: r.finish()) == v
            default: return false
            }
        }
    }
}
