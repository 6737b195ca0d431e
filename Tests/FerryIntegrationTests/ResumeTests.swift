import Foundation
import Testing
import FerryClient
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Downloads that resume for whoever asks next, and ranges served from the store (issue 11, item 2).
extension IntegrationTests {
@Suite struct ResumeTests {
    /// What the origin's log says it sent for each request to `path`, in order.
    static func sent(_ origin: OriginServer, path: String) throws -> [Int] {
        let (status, out, _) = try runCommand("/usr/bin/env", ["python3", "-c", """
            import json, sys, urllib.request
            log = json.load(urllib.request.urlopen("http://127.0.0.1:\(origin.port)/__log"))
            print(" ".join(str(e["sent"]) for e in log if e["path"] == sys.argv[1] and e["sent"] is not None))
            """, path])
        guard status == 0 else { throw HarnessError("origin log: \(out)") }
        return out.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// The test: a 200 MiB download cut at 150 MiB by the origin; another client's fetch of the URL makes
    /// the origin send only the last 50 MiB, and gets the whole body, byte-exact; a changed validator starts over.
    @Test func aCutDownloadIsResumedByTheNextClientAndAChangedValidatorStartsOver() async throws {
        let origin = try OriginServer()
        defer { origin.stop() }
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = TempDir()
        defer { dir.remove() }
        let size = 200 << 20, cut = 150 << 20
        let url = origin.url("/ranged?size=\(size)&cut_at=\(cut)&cc=max-age%3D600")
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        var got = 0
        var failure: FerryError?
        do {
            for try await event in client.fetchStream(FetchRequest(url)) { if case .chunk(let b) = event { got += b.count } }
        } catch let e as FerryError { failure = e }
        #expect(failure?.code == .unavailable && got <= cut, "\(String(describing: failure)) after \(got) bytes")
        try await Task.sleep(for: .milliseconds(500))  // the partial body reaches the store
        // A second process: the CLI, to a file.
        let out = dir.path + "/resumed.bin"
        let run = try runCommand(Binaries.ferry, ["fetch", "-s", url, "-o", out], environment: ["FERRY_SOCKET": daemon.socket])
        #expect(run.status == 0, "\(run.err)")
        #expect(try Self.sent(origin, path: "/ranged") == [cut, size - cut], "the origin sent 150 MiB, then only the rest")
        let reference = dir.path + "/reference.bin"
        #expect(try runCommand("/usr/bin/curl", ["-s", "-o", reference, origin.url("/ranged?size=\(size)")]).status == 0)
        #expect(try runCommand("/usr/bin/cmp", [reference, out]).status == 0, "the resumed body is the origin's, byte for byte")
        #expect(try await client.fetch(FetchRequest(url)).cacheStatus == .hit, "and it was stored whole")
        #expect(try await client.stats()["fetch"]?["resumed"]?.intValue == 1)

        // Another URL whose validator changes with every request: cut, then the next try starts over.
        let small = 8 << 20, smallCut = 6 << 20
        let changing = origin.url("/ranged?size=\(small)&cut_at=\(smallCut)&retag=1&cc=max-age%3D600")
        _ = try? await client.fetch(FetchRequest(changing))
        try await Task.sleep(for: .milliseconds(500))
        let whole = try await client.fetch(FetchRequest(changing))
        #expect(whole.status == 200 && whole.body.count == small)
        let log = try Self.sent(origin, path: "/ranged")
        #expect(log.suffix(2) == [smallCut, small], "If-Range no longer matched: the whole body again (\(log))")
        let matches = whole.body.withUnsafeBufferPointer { b in (0..<b.count).allSatisfy { b[$0] == UInt8($0 % 251) } }
        #expect(matches, "and it is the new body, not the old bytes with the new ones")
    }

    /// A daemon stopped in the middle of a download keeps what it had: after the restart, the next request for
    /// the URL asks the origin only for the rest.
    @Test func aDownloadInterruptedByTheDaemonsStopResumesAfterTheRestart() async throws {
        let origin = try OriginServer()
        defer { origin.stop() }
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        let size = 12 << 20
        let url = origin.url("/ranged?size=\(size)&pace_ms=400&cc=max-age%3D600")  // 4.8 s: longer than a stop waits
        do {
            let d = try Daemon(["--cache-dir", cacheDir.path, "--grace", "200ms"])
            defer { d.stop() }
            let c = try await FerryClient.connect(path: d.socket)
            defer { c.close() }
            var got = 0
            var signalled = false
            do {
                for try await event in c.fetchStream(FetchRequest(url)) {
                    if case .chunk(let b) = event { got += b.count }
                    if got >= 4 << 20 && !signalled {
                        signalled = true  // once: a second signal stops at once
                        d.signal(SIGTERM)
                    }
                }
            } catch {}
            #expect(signalled && got < size, "stopped halfway (\(got) bytes)")
            #expect(d.waitExit() == 0, "\(d.log)")
        }
        let d = try Daemon(["--cache-dir", cacheDir.path])
        defer { d.stop() }
        let c = try await FerryClient.connect(path: d.socket)
        defer { c.close() }
        let whole = try await c.fetch(FetchRequest(url))
        #expect(whole.status == 200 && whole.body.count == size)
        let matches = whole.body.withUnsafeBufferPointer { b in (0..<b.count).allSatisfy { b[$0] == UInt8($0 % 251) } }
        #expect(matches)
        let sent = try Self.sent(origin, path: "/ranged")
        #expect(sent.count == 2 && sent[1] < size && sent[0] + sent[1] >= size, "the origin sent \(sent): the rest only, after the restart")
        #expect(try await c.stats()["fetch"]?["resumed"]?.intValue == 1)
    }

    /// An origin's 206 from byte 0 for a client's range is kept: a range inside it is served from the store, and
    /// a plain GET then asks the origin only for the rest of the body.
    @Test func aRangeFromTheStartIsKeptAndTheWholeResumesFromIt() async throws {
        let rig = try await FetchRig()
        defer { rig.stop() }
        let origin = rig.origin, client = rig.client
        let size = 3_000_000
        let url = origin.url("/ranged?size=\(size)&cc=max-age%3D600")
        let first = try await client.fetch(FetchRequest(url, headers: [HTTPHeader("Range", "bytes=0-1999999")]))
        #expect(first.status == 206 && first.body.count == 2_000_000 && first.cacheStatus == .miss)
        try await Task.sleep(for: .milliseconds(300))  // the part reaches the store
        let inside = try await client.fetch(FetchRequest(url, headers: [HTTPHeader("Range", "bytes=100-199")]))
        #expect(inside.status == 206 && inside.cacheStatus == .hit && inside.header("content-range") == "bytes 100-199/3000000")
        #expect(inside.body == (100..<200).map { UInt8($0 % 251) })
        #expect(try origin.count(path: "/ranged") == 1, "served from the kept part")
        let whole = try await client.fetch(FetchRequest(url))
        #expect(whole.status == 200 && whole.body.count == size)
        #expect(whole.body.withUnsafeBufferPointer { b in (0..<b.count).allSatisfy { b[$0] == UInt8($0 % 251) } })
        #expect(try Self.sent(origin, path: "/ranged") == [2_000_000, 1_000_000], "the origin sent the first 2 MB, then only the rest")
    }

    /// A byte range of a stored response is served from the store (206, Content-Range), If-Range is honoured, an
    /// unsatisfiable one gets 416; `ferry fetch -C -` resumes a file as curl's does.
    @Test func rangesOfAStoredResponseAndCurlsResume() async throws {
        let rig = try await FetchRig()
        defer { rig.stop() }
        let origin = rig.origin, client = rig.client, daemon = rig.daemon
        let dir = TempDir()
        defer { dir.remove() }
        let size = 3_000_000
        let url = origin.url("/ranged?size=\(size)&tag=t1&cc=max-age%3D600")
        #expect(try await client.fetch(FetchRequest(url)).body.count == size)
        func ranged(_ headers: [HTTPHeader]) async throws -> FetchResponse { try await client.fetch(FetchRequest(url, headers: headers)) }
        let part = try await ranged([HTTPHeader("Range", "bytes=2999990-")])
        #expect(part.status == 206 && part.cacheStatus == .hit && part.header("content-range") == "bytes 2999990-2999999/3000000")
        #expect(part.body == (2_999_990..<3_000_000).map { UInt8($0 % 251) })
        let middle = try await ranged([HTTPHeader("Range", "bytes=1000000-2999999")])
        #expect(middle.status == 206 && middle.body.count == 2_000_000 && middle.body.first == UInt8(1_000_000 % 251))
        #expect(try await ranged([HTTPHeader("Range", "bytes=100-"), HTTPHeader("If-Range", "\"t1\"")]).status == 206)
        let stale = try await ranged([HTTPHeader("Range", "bytes=100-"), HTTPHeader("If-Range", "\"old\"")])
        #expect(stale.status == 200 && stale.body.count == size, "If-Range with another validator: the whole")
        #expect(try await ranged([HTTPHeader("Range", "bytes=5000000-")]).status == 416)
        #expect(try origin.count(path: "/ranged") == 1, "all from the store")

        // -C -: a file with the first 1,000,000 bytes gets the rest appended.
        let file = dir.path + "/part.bin"
        try Data((0..<1_000_000).map { UInt8($0 % 251) }).write(to: URL(fileURLWithPath: file))
        let run = try runCommand(Binaries.ferry, ["fetch", "-s", "-C", "-", url, "-o", file], environment: ["FERRY_SOCKET": daemon.socket])
        #expect(run.status == 0, "\(run.err)")
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(whole.count == size && whole.enumerated().allSatisfy { $0.element == UInt8($0.offset % 251) })
        let again = try runCommand(Binaries.ferry, ["fetch", "-s", "-C", "-", url, "-o", file], environment: ["FERRY_SOCKET": daemon.socket])
        let sizeAfter = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int
        #expect(again.status == 0 && sizeAfter == size, "complete: untouched (\(again.err))")
        let small = dir.path + "/small.bin"
        try Data(repeating: 0, count: 100).write(to: URL(fileURLWithPath: small))
        let noRanges = try runCommand(Binaries.ferry, ["fetch", "-s", "-C", "100", origin.url("/r?size=1000"), "-o", small],
                                      environment: ["FERRY_SOCKET": daemon.socket])
        #expect(noRanges.status == 33, "an origin that ignores ranges: curl's exit 33 (\(noRanges.err))")
        let smallSize = try FileManager.default.attributesOfItem(atPath: small)[.size] as? Int
        #expect(smallSize == 100, "and nothing appended")
    }

    /// RFC 9111 §3.3–3.4 in a real daemon: a 206 of any range is kept (also without a validator) and answers the
    /// ranges inside it; two parts of 2 MB that overlap under one ETag are joined into the whole body, which is
    /// then the stored response.
    @Test func partsAreKeptServedAndJoinedIntoTheWhole() async throws {
        let rig = try await FetchRig()
        defer { rig.stop() }
        let origin = rig.origin, client = rig.client
        func ranged(_ url: String, _ range: String) async throws -> FetchResponse {
            try await client.fetch(FetchRequest(url, headers: [HTTPHeader("Range", range)]))
        }
        let small = origin.url("/ranged?size=10&notag=1&cc=max-age%3D3600")
        let suffix = try await ranged(small, "bytes=-5")
        #expect(suffix.status == 206 && suffix.header("content-range") == "bytes 5-9/10" && suffix.cacheStatus == .miss)
        try await Task.sleep(for: .milliseconds(200))
        let inside = try await ranged(small, "bytes=6-8")
        #expect(inside.status == 206 && inside.cacheStatus == .hit && inside.body == [6, 7, 8])
        #expect(try await ranged(small, "bytes=-1").body == [9])
        #expect(try origin.count(path: "/ranged") == 1)

        let size = 3_000_000
        let url = origin.url("/ranged?size=\(size)&tag=p1&cc=max-age%3D3600")
        #expect(try await ranged(url, "bytes=1000000-").body.count == 2_000_000)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await ranged(url, "bytes=0-1999999").body.count == 2_000_000, "overlaps the stored part")
        try await Task.sleep(for: .milliseconds(300))
        let whole = try await client.fetch(FetchRequest(url))
        #expect(whole.status == 200 && whole.cacheStatus == .hit && whole.body.count == size)
        #expect(whole.body.withUnsafeBufferPointer { b in (0..<b.count).allSatisfy { b[$0] == UInt8($0 % 251) } })
        #expect(try Self.sent(origin, path: "/ranged") == [5, 2_000_000, 2_000_000], "the whole came from the two parts")
        #expect(try await client.stats()["fetch"]?["parts_combined"]?.intValue == 1)
    }
}
}
