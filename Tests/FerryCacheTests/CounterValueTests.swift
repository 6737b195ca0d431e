import Testing
import FerryCache

@Suite struct CounterValueTests {
    @Test func acceptsOnlyTheSpellingItPrints() {
        for n: Int64 in [0, 1, -1, 42, -42, Int64.max, Int64.min] {
            #expect(CounterValue.parse(CounterValue.bytes(n)) == n)
        }
        for bad in ["", "-", "+1", "01", "-0", "00", " 1", "1 ", "1.0", "1e3", "0x10", "١", "9223372036854775808",
                    "-9223372036854775809", "99999999999999999999"] {
            #expect(CounterValue.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    @Test func sumsThatDoNotFitAreOverflow() {
        #expect(CounterValue.add(41, 1) == .value(42))
        #expect(CounterValue.add(-5, 3) == .value(-2))
        #expect(CounterValue.add(Int64.max, 1) == .overflow)
        #expect(CounterValue.add(Int64.min, -1) == .overflow)
        #expect(CounterValue.add(Int64.max, Int64.min) == .value(-1))
    }
}
