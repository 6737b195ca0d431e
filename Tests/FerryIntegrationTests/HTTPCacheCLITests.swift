import Foundation
import Testing
import FerryClient
import FerryProtocol

/// `ferry http ls|show|purge` over a real ferryd and origin: what the HTTP cache holds (variants counted, partitions
/// by count only), paging that never splits a URL, and purges that make the next request a miss.
extension IntegrationTests {
@Suite struct HTTPCacheCLITests {
    @Test func listShowAndPurgeTheHTTPCache() async throws {
        let files = TempDir()
        defer { files.remove() }
        try FileManager.default.copyItem(atPath: ImageTests.fixtures + "/png-37x21.png", toPath: files.path + "/p.png")
        let origin = try OriginServer(files: files.path)
        defer { origin.stop() }
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        func ferry(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
            try runCommand(Binaries.ferry, ["http"] + args, environment: ["FERRY_SOCKET": daemon.socket])
        }
        let plain = origin.url("/r?body=a&cc=max-age%3D600")
        let varied = origin.url("/r?body=b&cc=max-age%3D600&vary=Accept")
        let personal = origin.url("/r?body=q&cc=max-age%3D600&h=Vary:Authorization")
        func get(_ url: String, _ headers: [HTTPHeader] = []) async throws -> CacheStatus? {
            try await client.fetch(FetchRequest(url, headers: headers)).cacheStatus
        }
        #expect(try await get(plain) == .miss)
        for accept in ["text/plain", "application/json"] { #expect(try await get(varied, [HTTPHeader("Accept", accept)]) == .miss) }
        for bearer in ["one", "two"] { #expect(try await get(personal, [HTTPHeader("Authorization", "Bearer \(bearer)")]) == .miss) }

        let long = try ferry(["ls", "-l"]).out.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(long.map { $0[0] }.sorted() == [plain, personal, varied].sorted(), "\(long)")
        let plainLine = try #require(long.first { $0[0] == plain })
        #expect(plainLine[1] == "200" && plainLine[2] == "1" && plainLine[4] == "fresh" && plainLine.last == "partitions 0", "\(plainLine)")
        #expect(long.first { $0[0] == varied }?[2] == "2 variants")
        #expect(long.first { $0[0] == personal }?.last == "partitions 2", "credentialed copies are counted")

        let shown = try ferry(["show", varied])
        #expect(shown.status == 0 && shown.out.contains("Vary: Accept") && shown.out.contains("Variant: accept=text/plain")
                && shown.out.contains("Variant: accept=application/json") && shown.out.contains("fresh for"), "\(shown.out)")
        let secret = try ferry(["show", personal, "--json"])
        #expect(secret.status == 0 && !secret.out.contains("Bearer") && secret.out.contains("\"partitions\":2"), "\(secret.out)")

        // One URL per page: each page holds a whole URL, however many keys (variants, partitions) it has.
        let paged = try await client.httpCacheList(pageSize: 1)
        #expect(paged.map(\.url) == [plain, personal, varied].sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        #expect(try await client.httpCacheList(prefix: origin.url("/r?body=b")).map(\.url) == [varied])

        #expect(try ferry(["purge", personal]).status == 0)
        #expect(try await get(personal, [HTTPHeader("Authorization", "Bearer one")]) == .miss, "every partition went")
        #expect(try await get(plain) == .hit)
        #expect(try ferry(["purge", plain]).status == 0)
        #expect(try ferry(["purge", plain]).status == 1, "nothing left to purge: exit 1")
        #expect(try await get(plain) == .miss)
        #expect(try origin.countExact("/r?body=a&cc=max-age%3D600") == 2)

        // An image: the purge reaches the image loader's memory too.
        let image = origin.url("/file/p.png?cc=max-age%3D600")
        #expect(try await client.image(image).source == .network)
        #expect(try await client.image(image).source == .memory)
        let purged = try ferry(["purge", "--prefix", origin.url("/")])
        #expect(purged.out == "purged 4 URLs\n", "\(purged)")
        #expect(try await client.image(image).source == .network)
        #expect(try await get(varied, [HTTPHeader("Accept", "text/plain")]) == .miss)

        let missing = try ferry(["show", origin.url("/nothing")])
        #expect(missing.status == 1 && missing.err.contains("not_found"))
        #expect(try ferry(["purge", "--prefix", ""]).status == 1, "an empty prefix is refused, not a wipe")
        #expect(try ferry(["ls", "a", "b"]).status == 2)
    }
}
}
