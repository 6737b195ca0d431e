import Foundation
import Testing
import FerryProtocol
@testable import FerryServer

/// The access line as written through its cursor: every field in its place, logfmt values quoted only when they
/// must be, JSON strings escaped byte for byte as `JSONWriter` escapes them, slow requests flagged (and alone at
/// warn), the clock read once per flush (counted) and its second written as it is, and a line far longer than the
/// buffer's first room written whole.
@Suite struct AccessLogLineTests {
    /// The lines `entries` come to, in `format` at `level`, read back from a log file.
    static func lines(_ format: LogFormat, level: LogLevel = .info, slowMs: Int = 1000, _ entries: [AccessEntry]) throws -> [String] {
        let path = NSTemporaryDirectory() + "access-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = AccessLog(sink: LogSink(level: level, path: path, format: format), format: format, slowMs: slowMs)
        for e in entries { log.request(e) }
        log.flush()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// A line without its time (the first 24 bytes).
    static func untimed(_ line: String) -> String { String(line.dropFirst(24)) }

    static let fetch = AccessEntry(op: "fetch", connection: 3, uid: 1000, url: "http://127.0.0.1:8080/q?a=1&b=two",
                                   outcome: "ok", httpStatus: 200, cacheStatus: "hit", bytes: 2048, nanoseconds: 412_345)

    @Test func logfmtLineHasEveryFieldInOrder() throws {
        let get = AccessEntry(op: "cache.get", connection: 7, uid: 0, key: "k 1 \"q\"=x", namespace: "default",
                              outcome: "not_found", bytes: 0, nanoseconds: 40_000)
        let got = try Self.lines(.logfmt, [Self.fetch, get])
        #expect(got.count == 2)
        #expect(Self.untimed(got[0]) == #" info access op=fetch conn=3 uid=1000 url="http://127.0.0.1:8080/q?a=1&b=two" status=ok http=200 cache=hit bytes=2048 ms=0.412"#)
        #expect(Self.untimed(got[1]) == #" info access op=cache.get conn=7 uid=0 ns=default key="k 1 \"q\"=x" status=not_found bytes=0 ms=0.040"#)
        #expect(got[0].dropFirst(19).first == "." && got[0].dropFirst(23).first == "Z" && got[0].dropFirst(24).first == " ")
    }

    @Test func jsonStringsAreEscapedAsJSONWriterEscapesThem() throws {
        let tricky = ["plain", "", "quote \" backslash \\ slash /", "tab\tnew\nline\r\u{8}\u{c}", "\u{1}\u{1f}\u{7f}",
                      "é e\u{301} 日本 🚢", String(repeating: "long-", count: 40)]
        for value in tricky {
            let e = AccessEntry(op: "cache.get", connection: 1, uid: 1, key: value, namespace: "ns", outcome: "ok",
                                bytes: 1, nanoseconds: 0)
            let line = try #require(try Self.lines(.json, [e]).first)
            var expected: [UInt8] = []
            JSONWriter.writeString(value, to: &expected)
            #expect(line.contains(",\"key\":" + String(decoding: expected, as: UTF8.self) + ",\"status\""))
            // And the whole line is one JSON object that says the same.
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["key"] as? String == value)
            #expect(object["msg"] as? String == "access" && object["level"] as? String == "info")
            #expect(object["ms"] as? Double == 0)
        }
    }

    @Test func slowRequestsAreFlaggedAndAloneAtWarn() throws {
        var slow = Self.fetch
        slow.nanoseconds = 1_500_000_000
        let atInfo = try Self.lines(.logfmt, [Self.fetch, slow])
        #expect(atInfo.count == 2)
        #expect(Self.untimed(atInfo[1]).hasPrefix(" warn access op=fetch"))
        #expect(atInfo[1].hasSuffix(" ms=1500.000 slow=true"))
        let atWarn = try Self.lines(.logfmt, level: .warn, [Self.fetch, slow, Self.fetch])
        #expect(atWarn.count == 1 && atWarn[0].hasSuffix("slow=true"))
        let json = try #require(try Self.lines(.json, level: .warn, [slow]).first)
        #expect(json.hasSuffix(",\"ms\":1500.000,\"slow\":true}"))
    }

    @Test func aLongLineIsWrittenWhole() throws {
        var long = Self.fetch
        long.url = "http://127.0.0.1/" + String(repeating: "p", count: 300_000)   // past the buffer's first room
        let got = try Self.lines(.logfmt, Array(repeating: Self.fetch, count: 50) + [long, Self.fetch])
        #expect(got.count == 52)
        #expect(got[50].contains("url=" + long.url! + " status=ok"))
        #expect(Self.untimed(got[51]) == Self.untimed(got[0]))
    }

    /// A wall clock that counts its reads and moves on a second each time.
    final class CountingClock {
        var reads = 0
        let start: Int
        init(start: Int) { self.start = start }
        func read() -> timespec {
            reads += 1
            return timespec(tv_sec: start + reads - 1, tv_nsec: 123_456_789)
        }
    }

    @Test func theClockIsReadOncePerFlushAndEachLineCarriesThatTime() throws {
        let path = NSTemporaryDirectory() + "access-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = CountingClock(start: 1_000_000_000)
        let log = AccessLog(sink: LogSink(level: .info, path: path, format: .logfmt), format: .logfmt, slowMs: 1000,
                            clock: clock.read)
        log.flush()
        #expect(clock.reads == 0)   // no line, no reading
        for _ in 0..<3 { log.request(Self.fetch) }
        log.flush()
        #expect(clock.reads == 1)
        for _ in 0..<2 { log.request(Self.fetch) }
        log.flush()
        #expect(clock.reads == 2)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let stamps = text.split(separator: "\n").map { String($0.prefix(24)) }
        #expect(stamps == Array(repeating: "2001-09-09T01:46:40.123Z", count: 3) + Array(repeating: "2001-09-09T01:46:41.123Z", count: 2))
    }

    @Test func theDateIsTheClocksOwnSecond() throws {
        for (seconds, expected) in [(0, "1970-01-01T00:00:00.123Z"), (1_764_921_600, "2025-12-05T08:00:00.123Z"),
                                    (951_782_399, "2000-02-28T23:59:59.123Z"), (951_782_400 + 86_400, "2000-03-01T00:00:00.123Z")] {
            let path = NSTemporaryDirectory() + "access-\(UUID().uuidString).log"
            defer { try? FileManager.default.removeItem(atPath: path) }
            let clock = CountingClock(start: seconds)
            let log = AccessLog(sink: LogSink(level: .info, path: path, format: .logfmt), format: .logfmt, slowMs: 1000,
                                clock: clock.read)
            log.request(Self.fetch)
            log.flush()
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(String(text.prefix(24)) == expected)
        }
    }
}
