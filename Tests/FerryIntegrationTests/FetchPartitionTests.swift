import Foundation
import Testing
import FerryClient

/// Authenticated API calls are cached per credential by a real ferryd (issue 11, item 3), and the token reaches
/// neither the cache's files nor its keys.
extension IntegrationTests {
@Suite struct FetchPartitionTests {
    @Test func anAuthenticatedCallIsAHitForItsTokenAndTheTokenNeverReachesTheDisk() async throws {
        let s = try await FetchTests.Setup()
        defer { s.stop() }
        let token = "sekrit-\(UInt32.random(in: 0...UInt32.max))"
        // The README's Endpoint: a Bearer token and a version header; the response says nothing about sharing.
        func call(_ bearer: String?) async throws -> FetchResponse {
            var headers = [HTTPHeader("X-Api-Version", "2")]
            if let bearer { headers.append(HTTPHeader("Authorization", "Bearer \(bearer)")) }
            return try await s.client.fetch(FetchRequest(s.origin.url("/r?body=quotes&cc=max-age%3D600&h=Vary:Authorization"),
                                                         headers: headers))
        }
        #expect(try await call(token).cacheStatus == .miss)
        let second = try await call(token)
        #expect(second.cacheStatus == .hit, "\(second.cacheStatus as Any) \(second.headers)")
        #expect(try await call("another").cacheStatus == .miss)
        #expect(try await call(nil).cacheStatus == .miss)
        #expect(try await call(token).cacheStatus == .hit && (try s.origin.count(path: "/r")) == 3)
        // Restarted (the test's socket is not on tmpfs, so the partition key was the run's own): A's copy is then
        // never found again, but never served to anyone else either.
        let stats = try await s.client.stats()
        #expect((stats["cache"]?["disk"]?["entries"]?.intValue ?? 0) >= 2)
        try await Task.sleep(for: .milliseconds(1200))  // the journal reaches the index
        let grep = try runCommand("/bin/grep", ["-r", "-l", "-a", token, s.daemon.dir.path + "/cache"])
        #expect(grep.status == 1, "the token is in \(grep.out)")
    }
}
}
