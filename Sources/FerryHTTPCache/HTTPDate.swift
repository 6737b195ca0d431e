/// HTTP-date parsing and formatting (RFC 9110 §5.6.7), in Unix seconds, without Foundation.
///
/// Accepted forms (exactly one space between parts, as the grammar requires):
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT` (the only form ever generated)
/// - obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`
/// - obsolete asctime: `Sun Nov  6 08:49:37 1994`
///
/// Interpretive choices:
/// - Leading and trailing spaces/tabs are ignored.
/// - Day names, month names and `GMT` are matched case-insensitively. The grammar is case-sensitive, but
///   RFC 9110 §5.6.7 encourages recipients to be robust, and a wrong-case `Expires` is far more likely to be a
///   sloppy origin than a different date (the cache-tests.fyi suite rates reusing such responses as the
///   better behaviour). Pass `caseSensitive: true` for the strict grammar.
/// - The day name is checked to be a day name but not checked against the date.
/// - Anything else (a two-digit year outside RFC 850 form, `UTC`, missing comma, doubled spaces, one-digit
///   hour, `31 Feb`, ...) is invalid and gives nil; callers treat an invalid `Expires` as "already expired".
///
/// ```swift
/// HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")  // 784111777
/// HTTPDate.format(784111777)                        // "Sun, 06 Nov 1994 08:49:37 GMT"
/// HTTPDate.parse("Thu, 18 Aug 50 02:01:18 GMT")     // nil
/// ```
public enum HTTPDate {
    private static let shortDays = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    private static let longDays = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The Unix time of an HTTP-date, or nil when `s` is not one.
    ///
    /// `now` only matters for the RFC 850 form's two-digit year: RFC 9110 §5.6.7 says a year that appears to be
    /// more than 50 years in the future is the most recent past year with those two digits. Without `now`,
    /// the fixed rule 00–69 → 20xx, 70–99 → 19xx is used.
    ///
    /// ```swift
    /// HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT")   // 784111777
    /// HTTPDate.parse("Sun Nov  6 08:49:37 1994")         // 784111777
    /// HTTPDate.parse("0")                                // nil
    /// ```
    public static func parse(_ s: String, now: Int64? = nil, caseSensitive: Bool = false) -> Int64? {
        let b = Array(ListSyntax.trimOWS(Substring(s)).utf8)
        guard b.count >= 24 else { return nil }
        if b[3] == 0x2C { return parseIMF(b, caseSensitive) }
        if b[3] == ListSyntax.space { return parseAsctime(b, caseSensitive) }
        return parseRFC850(b, now: now, caseSensitive)
    }

    /// The IMF-fixdate of a Unix time.
    ///
    /// ```swift
    /// HTTPDate.format(0)  // "Thu, 01 Jan 1970 00:00:00 GMT"
    /// ```
    public static func format(_ seconds: Int64) -> String {
        let days = floorDiv(seconds, 86_400)
        let secs = seconds - days * 86_400
        let (y, m, d) = civil(fromDays: days)
        let weekday = Int(((days % 7) + 11) % 7)  // 1970-01-01 was a Thursday (index 4)
        let day = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][weekday]
        let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][m - 1]
        return "\(day), \(pad(d, 2)) \(month) \(pad(Int(y), 4)) \(pad(Int(secs / 3600), 2)):"
            + "\(pad(Int(secs / 60 % 60), 2)):\(pad(Int(secs % 60), 2)) GMT"
    }

    // MARK: - The three forms

    // "Sun, 06 Nov 1994 08:49:37 GMT"
    private static func parseIMF(_ b: [UInt8], _ cs: Bool) -> Int64? {
        guard b.count == 29, name(b[0..<3], in: shortDays, cs) != nil, b[4] == 0x20,
            let day = digits(b[5..<7]), b[7] == 0x20, let month = name(b[8..<11], in: months, cs), b[11] == 0x20,
            let year = digits(b[12..<16]), b[16] == 0x20, let time = timeOfDay(b[17..<25]), b[25] == 0x20,
            isGMT(b[26..<29], cs)
        else { return nil }
        return assemble(year: year, month: month + 1, day: day, time: time)
    }

    // "Sunday, 06-Nov-94 08:49:37 GMT"
    private static func parseRFC850(_ b: [UInt8], now: Int64?, _ cs: Bool) -> Int64? {
        guard let comma = b.firstIndex(of: 0x2C), name(b[0..<comma], in: longDays, cs) != nil else { return nil }
        let r = Array(b[(comma + 1)...])
        guard r.count == 23, r[0] == 0x20, let day = digits(r[1..<3]), r[3] == 0x2D,
            let month = name(r[4..<7], in: months, cs), r[7] == 0x2D, let yy = digits(r[8..<10]), r[10] == 0x20,
            let time = timeOfDay(r[11..<19]), r[19] == 0x20, isGMT(r[20..<23], cs)
        else { return nil }
        return assemble(year: fullYear(twoDigit: yy, now: now), month: month + 1, day: day, time: time)
    }

    // "Sun Nov  6 08:49:37 1994"
    private static func parseAsctime(_ b: [UInt8], _ cs: Bool) -> Int64? {
        guard b.count == 24, name(b[0..<3], in: shortDays, cs) != nil, let month = name(b[4..<7], in: months, cs),
            b[7] == 0x20, b[10] == 0x20, let time = timeOfDay(b[11..<19]), b[19] == 0x20,
            let year = digits(b[20..<24])
        else { return nil }
        // day = 2DIGIT / ( SP DIGIT )
        let day: Int
        if b[8] == 0x20 {
            guard let d = digits(b[9..<10]) else { return nil }
            day = d
        } else {
            guard let d = digits(b[8..<10]) else { return nil }
            day = d
        }
        return assemble(year: year, month: month + 1, day: day, time: time)
    }

    // MARK: - Pieces

    /// The year RFC 9110 §5.6.7 assigns to a two-digit RFC 850 year.
    static func fullYear(twoDigit yy: Int, now: Int64?) -> Int {
        guard let now else { return yy < 70 ? 2000 + yy : 1900 + yy }
        let current = Int(civil(fromDays: floorDiv(now, 86_400)).year)
        var year = current - current % 100 + yy
        if year > current + 50 { year -= 100 }
        return year
    }

    private static func assemble(year: Int, month: Int, day: Int, time: Int64) -> Int64? {
        guard month >= 1, month <= 12, day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        return days(fromCivil: Int64(year), month, day) * 86_400 + time
    }

    /// "hh:mm:ss" as seconds into the day; a leap second (60) is accepted as RFC 9110 allows.
    private static func timeOfDay(_ b: ArraySlice<UInt8>) -> Int64? {
        let s = Array(b)
        guard s.count == 8, s[2] == 0x3A, s[5] == 0x3A, let h = digits(s[0..<2]), let m = digits(s[3..<5]),
            let sec = digits(s[6..<8]), h < 24, m < 60, sec <= 60
        else { return nil }
        return Int64(h * 3600 + m * 60 + sec)
    }

    private static func digits(_ b: ArraySlice<UInt8>) -> Int? {
        var v = 0
        for c in b {
            guard c >= 0x30, c <= 0x39 else { return nil }
            v = v * 10 + Int(c - 0x30)
        }
        return b.isEmpty ? nil : v
    }

    private static func name(_ b: ArraySlice<UInt8>, in names: [String], _ caseSensitive: Bool) -> Int? {
        let word = String(decoding: b, as: UTF8.self)
        if caseSensitive {
            // The grammar's spelling: first letter upper-case, the rest lower-case.
            guard let first = word.utf8.first, first >= 0x41, first <= 0x5A,
                word.utf8.dropFirst().allSatisfy({ $0 < 0x41 || $0 > 0x5A })
            else { return nil }
        }
        return names.firstIndex(of: ListSyntax.lower(word))
    }

    private static func isGMT(_ b: ArraySlice<UInt8>, _ caseSensitive: Bool) -> Bool {
        let word = String(decoding: b, as: UTF8.self)
        return caseSensitive ? word == "GMT" : ListSyntax.lower(word) == "gmt"
    }

    private static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, after H. Hinnant's days_from_civil)

    static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    /// Days since 1970-01-01 of a civil date.
    static func days(fromCivil year: Int64, _ month: Int, _ day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let mp = Int64((month + 9) % 12)
        let doy = (153 * mp + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The civil date of a day count since 1970-01-01.
    static func civil(fromDays z0: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = z0 + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = Int(doy - (153 * mp + 2) / 5 + 1)
        let m = Int(mp < 10 ? mp + 3 : mp - 9)
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
