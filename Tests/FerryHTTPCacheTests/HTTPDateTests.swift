import Testing
@testable import FerryHTTPCache

@Suite struct HTTPDateTests {
    @Test func parsesTheThreeFormats() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == 784_111_777)
        let tenDaysLater: Int64 = 784_111_777 + 10 * 86_400
        #expect(HTTPDate.parse("Wed Nov 16 08:49:37 1994") == tenDaysLater)
        #expect(HTTPDate.parse("Thu, 18 Aug 2050 02:01:18 GMT") == 2_544_400_878)
    }

    @Test func toleratesSurroundingWhitespace() {
        #expect(HTTPDate.parse("  Sun, 06 Nov 1994 08:49:37 GMT\t") == 784_111_777)
    }

    @Test func formatsIMFFixdate() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(-1) == "Wed, 31 Dec 1969 23:59:59 GMT")
        #expect(HTTPDate.format(1_709_164_800) == "Thu, 29 Feb 2024 00:00:00 GMT")
        #expect(HTTPDate.format(1_700_000_000) == "Tue, 14 Nov 2023 22:13:20 GMT")
    }

    @Test func roundTrips() {
        for t: Int64 in [-2_203_891_200, -86_401, 0, 951_782_400, 1_700_000_000, 2_544_400_878, 4_102_444_799] {
            #expect(HTTPDate.parse(HTTPDate.format(t)) == t, "\(t)")
        }
    }

    @Test(arguments: [
        "", "0", "-1", "tomorrow",
        "Thu, 18 Aug 2050 02:01:18 UTC",  // not GMT
        "Thu, 18 Aug 50 02:01:18 GMT",  // two-digit year outside RFC 850 form
        "Thu 18 Aug 2050 02:01:18 GMT",  // missing comma
        "Thu, 18  Aug  2050 02:01:18 GMT",  // doubled spaces
        "Thu, 18-Aug-2050 02:01:18 GMT",  // dashes with a short day name and four-digit year
        "Thu, 18 Aug 2050 02.01.18 GMT",  // periods
        "Thu, 18 Aug 2050 2:01:18 GMT",  // one-digit hour
        "Thu, 18 Aug 2050 02:01:18 GMT x",  // trailing garbage
        "Fri, 31 Feb 2023 00:00:00 GMT",  // no such day
        "Wed, 29 Feb 2023 00:00:00 GMT",  // not a leap year
        "Sun, 06 Nov 1994 24:00:00 GMT",  // hour 24
        "Sun, 06 Nov 1994 08:60:00 GMT",  // minute 60
        "Xyz, 06 Nov 1994 08:49:37 GMT",  // not a day name
        "Sun, 06 Nox 1994 08:49:37 GMT",  // not a month
        "Sun, 6 Nov 1994 08:49:37 GMT",  // one-digit day in IMF-fixdate
        "Sun, 06-Nov-94 08:49:37 GMT",  // RFC 850 needs the full day name
        "Sunday, 06-Nov-1994 08:49:37 GMT",  // RFC 850 year is two digits
        "Sun Nov 6 08:49:37 1994",  // asctime pads the day with a space
    ])
    func rejectsInvalidDates(_ s: String) {
        #expect(HTTPDate.parse(s) == nil)
    }

    @Test func namesAreCaseInsensitiveUnlessStrict() {
        let sloppy = "THU, 18 AUG 2050 02:01:18 gMT"
        #expect(HTTPDate.parse(sloppy) == 2_544_400_878)
        #expect(HTTPDate.parse(sloppy, caseSensitive: true) == nil)
        #expect(HTTPDate.parse("Thu, 18 Aug 2050 02:01:18 GMT", caseSensitive: true) == 2_544_400_878)
    }

    @Test func acceptsALeapSecond() {
        #expect(HTTPDate.parse("Sat, 31 Dec 2016 23:59:60 GMT") == 1_483_228_800)
    }

    @Test func twoDigitYearsWithTheFixedCutoff() {
        #expect(HTTPDate.parse("Saturday, 01-Jan-77 00:00:00 GMT") == 220_924_800)  // 1977
        #expect(HTTPDate.parse("Tuesday, 01-Jan-69 00:00:00 GMT") == 3_124_224_000)  // 2069
    }

    @Test func twoDigitYearsWithTheFiftyYearRule() {
        let now: Int64 = 1_767_225_600  // 2026-01-01
        // 2076 is exactly 50 years ahead: not "more than 50 years in the future".
        #expect(HTTPDate.parse("Wednesday, 01-Jan-76 00:00:00 GMT", now: now) == 3_345_062_400)
        // 2077 would be 51 years ahead: it is 1977.
        #expect(HTTPDate.parse("Saturday, 01-Jan-77 00:00:00 GMT", now: now) == 220_924_800)
        // Without `now`, 76 is 1976 by the cutoff rule: the rule really changes the answer.
        #expect(HTTPDate.parse("Wednesday, 01-Jan-76 00:00:00 GMT") != 3_345_062_400)
        #expect(HTTPDate.fullYear(twoDigit: 26, now: now) == 2026)
        #expect(HTTPDate.fullYear(twoDigit: 99, now: now) == 1999)
    }
}
