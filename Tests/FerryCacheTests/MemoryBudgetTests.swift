import Testing
@testable import FerryCache

@Suite struct MemoryBudgetTests {
    @Test func reservationsFitOrTakeNothing() {
        let budget = MemoryBudget(limit: 100)
        #expect(budget.reserve(60, for: .uploads))
        #expect(!budget.reserve(41, for: .storeQueue), "over the limit")
        #expect(budget.used == 60 && budget.used(by: .storeQueue) == 0 && budget.refusals == 1)
        #expect(budget.reserve(40, for: .storeQueue))
        #expect(!budget.hasRoom && !budget.fits(1))
        budget.release(60, from: .uploads)
        #expect(budget.used == 40 && budget.hasRoom && budget.fits(60) && !budget.fits(61))
    }

    @Test func unconditionalBytesCountAndThePeakIsKept() {
        let budget = MemoryBudget(limit: 10)
        budget.add(25, to: .replies)  // a piece already due goes out whatever the budget says
        #expect(!budget.hasRoom && budget.used(by: .replies) == 25 && budget.peak == 25)
        budget.adjust(by: -20, account: .replies)
        budget.adjust(by: 3, account: .uploads)
        #expect(budget.used == 8 && budget.peak == 25 && budget.hasRoom)
        #expect(MemoryBudget.Account.allCases.map(\.name) == ["replies", "uploads", "store_queue", "fetch_bodies", "decoding"])
    }
}
