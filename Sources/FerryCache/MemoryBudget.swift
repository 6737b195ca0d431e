/// The daemon's one budget for bytes in transit: replies not yet written, request bodies still arriving, values
/// waiting for the disk, bodies of transfers in flight, pixels being decoded. The memory tiers (cache and images) have budgets of their
/// own and are reported beside it; together they are what the daemon may hold.
///
/// A part that can wait (a streamed reply) checks `hasRoom` before it makes more; a part that must take all or
/// nothing (an upload, a set for the disk) asks `reserve` and refuses its request when the answer is no. Parts that
/// cannot be refused halfway (a reply piece already due) `add` unconditionally. Loop thread only.
///
/// ```swift
/// let budget = MemoryBudget(limit: 64 << 20)
/// guard budget.reserve(body.count, for: .uploads) else { return refuse() }
/// …
/// budget.release(body.count, from: .uploads)
/// budget.used(by: .uploads)   // 0
/// ```
public final class MemoryBudget {
    public enum Account: Int, CaseIterable, Sendable {
        case replies, uploads, storeQueue, fetchBodies, decoding

        /// The name in `stats`.
        public var name: String {
            switch self {
            case .replies: return "replies"
            case .uploads: return "uploads"
            case .storeQueue: return "store_queue"
            case .fetchBodies: return "fetch_bodies"
            case .decoding: return "decoding"
            }
        }
    }

    public let limit: Int
    public private(set) var used = 0
    private var byAccount = [Int](repeating: 0, count: Account.allCases.count)
    /// The most ever used at once, for `stats` and the benchmark.
    public private(set) var peak = 0
    /// Reservations refused since start.
    public private(set) var refusals: UInt64 = 0

    public init(limit: Int) {
        precondition(limit > 0, "a memory budget needs a positive limit")
        self.limit = limit
    }

    public var hasRoom: Bool { used < limit }

    /// Takes `bytes` if they fit; false (and nothing taken) when they do not.
    public func reserve(_ bytes: Int, for account: Account) -> Bool {
        guard bytes <= limit - used else {
            refusals += 1
            return false
        }
        add(bytes, to: account)
        return true
    }

    /// Takes `bytes` whether or not they fit (the caller bounds them some other way).
    public func add(_ bytes: Int, to account: Account) {
        used += bytes
        byAccount[account.rawValue] += bytes
        if used > peak { peak = used }
    }

    public func release(_ bytes: Int, from account: Account) {
        used -= bytes
        byAccount[account.rawValue] -= bytes
        assert(byAccount[account.rawValue] >= 0, "\(account) released more than it took")
    }

    public func used(by account: Account) -> Int { byAccount[account.rawValue] }

    /// `add` or `release`, by the sign of `delta` (for a counter kept in step with the budget).
    public func adjust(by delta: Int, account: Account) {
        if delta >= 0 { add(delta, to: account) } else { release(-delta, from: account) }
    }

    /// Whether `bytes` more would fit.
    public func fits(_ bytes: Int) -> Bool { bytes <= limit - used }
}
