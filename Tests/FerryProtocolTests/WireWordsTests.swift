import Testing
@testable import FerryProtocol

/// The wire words are the protocol's: each raw value is spelled in PROTOCOL.md, and the sets are exactly the ones
/// the daemon and the clients exchange.
@Suite struct WireWordsTests {
    static let spec: String = {
        let root = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        return (try? String(contentsOfFile: "/" + root + "/Protocol/PROTOCOL.md", encoding: .utf8)) ?? ""
    }()

    @Test func everyWordIsInTheSpec() {
        #expect(!Self.spec.isEmpty, "PROTOCOL.md is readable from the test")
        let words = CacheStatus.allCases.map(\.rawValue) + ImageSource.allCases.map(\.rawValue) + EventName.allCases.map(\.rawValue)
            + CacheMode.allCases.map(\.rawValue) + RedirectMode.allCases.map(\.rawValue) + BodyKind.allCases.map(\.rawValue)
            + OperationName.allCases.map(\.rawValue) + ImageFit.allCases.map(\.rawValue) + ImageOutputFormat.allCases.map(\.rawValue)
        for word in words {
            #expect(Self.spec.contains("`\(word)`") || Self.spec.contains("\"\(word)\"") || Self.spec.contains(word),
                    "\(word) is spelled in PROTOCOL.md")
        }
    }

    @Test func theSetsAreTheProtocols() {
        #expect(CacheStatus.allCases.map(\.rawValue) == ["hit", "stale", "revalidated", "coalesced", "miss", "bypass"])
        #expect(CacheStatus.allCases.filter(\.servedFromStore) == [.hit, .stale, .revalidated])
        #expect(ImageSource.allCases.map(\.rawValue) == ["memory", "disk", "network", "made"])
        #expect(ImageFit.allCases.map(\.rawValue) == ["inside", "cover", "contain", "fill", "outside"])
        #expect(ImageOutputFormat.allCases.map(\.rawValue) == ["original", "jpeg", "png", "webp", "avif"])
        #expect(CacheMode(rawValue: "only-if-cached") == .onlyIfCached && CacheMode(rawValue: "onlyIfCached") == nil)
        #expect(RedirectMode.allCases.map(\.rawValue) == ["follow", "manual", "error"])
        #expect(BodyKind.allCases.filter(\.takesBody) == [.echo, .value, .http])
        // Every event an operation may send is a known event name, and every event name is sent by some operation.
        let sent = Set(OperationCatalog.v1.flatMap(\.events))
        #expect(sent == Set(EventName.allCases))
    }
}

@Suite struct MessageTextTests {
    @Test func truncationIsBoundedByTheLimitNotByTheInput() {
        #expect("short".truncatedForMessages == "short")
        let cluster = "a" + String(repeating: "\u{301}", count: 100_000)  // one Character of 200 KB
        let cut = cluster.truncated(toBytes: 16)
        #expect(cut.utf8.count <= 16 + 3 && cut.hasSuffix("…"))
        #expect(String(repeating: "é", count: 100).truncated(toBytes: 9).utf8.count == 8 + 3, "cut at a scalar boundary")
    }
}
