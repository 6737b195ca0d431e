import Testing
@testable import FerryServer

@Suite struct MetricsTextTests {
    @Test func histogramBucketsAreCumulativeAndBoundsInclusive() {
        var h = LatencyHistogram()
        h.record(nanoseconds: 100_000)        // exactly 100 µs: the first bucket (le is "less than or equal")
        h.record(nanoseconds: 100_001)
        h.record(nanoseconds: 3_000_000)      // 3 ms
        h.record(nanoseconds: 60_000_000_000) // a minute: past every bound
        h.recordInstant()
        let c = h.cumulative
        #expect(c.count == LatencyHistogram.bounds.count + 1)
        #expect(c[0] == 2 && c[1] == 3, "100 µs and the instant one, then 250 µs")
        #expect(c[LatencyHistogram.bounds.firstIndex(of: 0.005)!] == 4)
        #expect(c[LatencyHistogram.bounds.count - 1] == 4 && c.last == 5 && h.count == 5)
        #expect(h.sumNanoseconds == 100_000 + 100_001 + 3_000_000 + 60_000_000_000)
    }

    @Test func textEscapesLabelsAndWritesEachFamilyOnce() {
        var t = PrometheusText()
        t.family("ferry_x_total", .counter, "A help\\nwith a backslash.")
        t.sample("ferry_x_total", ["op": "a\"b\\c\nd"], UInt64(3))
        t.sample("ferry_x_total", [:], 0.25)
        #expect(t.output == """
            # HELP ferry_x_total A help\\\\nwith a backslash.
            # TYPE ferry_x_total counter
            ferry_x_total{op="a\\"b\\\\c\\nd"} 3
            ferry_x_total 0.25

            """)
        #expect(PrometheusText.number(.infinity) == "+Inf" && PrometheusText.number(1e-4) == "0.0001")
    }
}
