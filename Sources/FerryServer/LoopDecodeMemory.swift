import FerryCache
import FerryImages

/// `DecodeMemory` in the daemon's memory budget (account `decoding`): the decoders' threads hand each change to the
/// loop thread, which alone touches the budget. Counted whether or not it fits (a decode under way cannot be
/// refused halfway; the decoders' count and the pixel limit bound it), so a large decode makes room scarcer for
/// what can wait — streamed replies — as memory in use should.
///
/// ```swift
/// let decoder = VipsDecoder(pool: pool, memory: LoopDecodeMemory(budget: budget, post: mailbox.post))
/// ```
final class LoopDecodeMemory: DecodeMemory, @unchecked Sendable {
    /// Touched on the loop thread only.
    private unowned(unsafe) let budget: MemoryBudget
    private let post: LoopPost

    init(budget: MemoryBudget, post: @escaping LoopPost) {
        self.budget = budget
        self.post = post
    }

    func taking(_ bytes: Int) { post { [self] in budget.add(bytes, to: .decoding) } }
    func giving(_ bytes: Int) { post { [self] in budget.release(bytes, from: .decoding) } }
}
