import Testing
@testable import FerryImages

@Suite struct ResizeSlotsTests {
    /// Alone, an owner uses every slot; once another waits, a freed slot goes to it before the first owner's next.
    @Test func anOwnerAloneUsesEverySlotButAnotherIsServedFirstWhenItWaits() {
        var slots = ResizeSlots(limit: 2)
        let first = slots.acquire(owner: 1), second = slots.acquire(owner: 1)
        #expect(first && second)
        let third = slots.acquire(owner: 1), other = slots.acquire(owner: 2)
        #expect(!third && !other)
        slots.wait(owner: 1, ticket: 10)
        slots.wait(owner: 1, ticket: 11)
        slots.wait(owner: 2, ticket: 20)
        let a = slots.release(owner: 1), b = slots.release(owner: 1), c = slots.release(owner: 2)
        #expect(a == [20], "owner 2 is under its share; owner 1 is not")
        #expect(b == [10], "owner 1 is under its share again")
        #expect(c == [11])
        #expect(slots.waitingCount == 0 && slots.running == 2)
    }

    @Test func aWaiterThatLeavesIsNotStarted() {
        var slots = ResizeSlots(limit: 1)
        let first = slots.acquire(owner: 1)
        #expect(first)
        slots.wait(owner: 2, ticket: 1)
        slots.wait(owner: 3, ticket: 2)
        slots.leave(ticket: 1)
        let a = slots.release(owner: 1), b = slots.release(owner: 3)
        #expect(a == [2] && b == [] && slots.running == 0)
        let again = slots.acquire(owner: 4)
        #expect(again, "free again")
    }
}
