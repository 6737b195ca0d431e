import Testing
@testable import FerryRedis

/// Redis Cluster's routing rules, against the specification's own examples and `CLUSTER KEYSLOT`'s answers.
@Suite struct ClusterSlotsTests {
    func slot(_ key: String) -> Int { ClusterSlots.slot(of: Array(key.utf8)) }

    @Test func theHashIsXModemCRC16() {
        #expect(ClusterSlots.crc16(Array("123456789".utf8)[...]) == 0x31C3, "the specification's check value")
        // redis-cli CLUSTER KEYSLOT foo / bar / hello
        #expect(slot("foo") == 12182 && slot("bar") == 5061 && slot("hello") == 866)
    }

    @Test func hashTagsAsTheSpecificationDescribesThem() {
        #expect(slot("{user1000}.following") == slot("{user1000}.followers") && slot("{user1000}.following") == slot("user1000"))
        #expect(slot("foo{}{bar}") != slot("bar") && slot("foo{}{bar}") == ClusterSlots.slot(of: Array("foo{}{bar}".utf8)),
                "an empty tag: the whole key")
        #expect(slot("foo{{bar}}zap") == slot("{bar"), "the first { and the next }")
        #expect(slot("foo{bar}{zap}") == slot("bar"))
        #expect(slot("no{tag") == Int(ClusterSlots.crc16(Array("no{tag".utf8)[...]) & 0x3FFF))
        // Ferry's keys: a response, its variant and its lease share the URL's slot.
        let url = "GET https://a.test/x?q={1}"
        #expect(slot("ferry:v1:{\(url)}") == slot("ferry:v1:lease:{\(url)}"))
        #expect(slot("ferry:v1:{\(url)}\u{0}1f\u{0}gzip") == slot("ferry:v1:{\(url)}"))
    }

    @Test func theKeyOfACommand() {
        func key(_ args: String...) -> String? { ClusterSlots.routingKey(args.map { Array($0.utf8) }).map { String(decoding: $0, as: UTF8.self) } }
        #expect(key("GET", "k") == "k" && key("set", "k", "v", "PX", "1") == "k" && key("DEL", "k") == "k")
        #expect(key("EVAL", "return 1", "2", "k1", "k2", "a") == "k1")
        #expect(key("EVAL", "return 1", "0", "a") == nil && key("PUBLISH", "ch", "m") == nil && key("PING") == nil)
    }

    @Test func redirections() {
        #expect(ClusterSlots.redirection("MOVED 3999 127.0.0.1:6381") == .moved(slot: 3999, node: "127.0.0.1:6381"))
        #expect(ClusterSlots.redirection("ASK 3999 127.0.0.1:6381") == .ask(slot: 3999, node: "127.0.0.1:6381"))
        #expect(ClusterSlots.redirection("MOVED 16384 127.0.0.1:6381") == nil)
        #expect(ClusterSlots.redirection("WRONGTYPE Operation against a key") == nil)
        #expect(ClusterSlots.endpoint("::1:7000") == .tcp(host: "::1", port: 7000) && ClusterSlots.endpoint(":7000") == nil)
    }

    @Test func theTableFromClusterSlots() {
        func node(_ host: String, _ port: Int64) -> RedisReply { .array([.string(Array(host.utf8)), .integer(port), .string(Array("id".utf8))]) }
        let reply = RedisReply.array([
            .array([.integer(0), .integer(5460), node("127.0.0.1", 7000), node("127.0.0.1", 7003)]),
            .array([.integer(5461), .integer(10922), node("", 7001)]),
            .array([.integer(10923), .integer(16383), node("127.0.0.1", 7002)]),
        ])
        var table = ClusterSlots()
        #expect(!table.isComplete)
        #expect(table.load(reply, askedHost: "10.0.0.9") && table.isComplete)
        #expect(table.node(forSlot: 0) == "127.0.0.1:7000" && table.node(forSlot: 5461) == "10.0.0.9:7001")
        #expect(table.node(forSlot: 16383) == "127.0.0.1:7002" && table.nodes.count == 3)
        table.assign(slot: 5461, to: "127.0.0.1:7002")
        #expect(table.node(forSlot: 5461) == "127.0.0.1:7002" && table.node(forSlot: 5462) == "10.0.0.9:7001")
        var partial = ClusterSlots()
        #expect(partial.load(.array([.array([.integer(0), .integer(99), node("h", 1)])]), askedHost: "") && !partial.isComplete)
        #expect(!partial.load(.error("ERR This instance has cluster support disabled"), askedHost: "") && partial.node(forSlot: 0) == "h:1")
    }
}
