import Foundation
import Testing
@testable import FerryProtocol

/// Protocol/vectors/frames.json: the Python client's tests check the same file.
@Suite struct GoldenVectorTests {
    static func load() throws -> JSONValue {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let data = try Data(contentsOf: url.appendingPathComponent("Protocol/vectors/frames.json"))
        return try JSONParser.parse(Array(data), maxDepth: 64)
    }

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    @Test func validFramesDecodeAndReencodeByteForByte() throws {
        let vectors = try Self.load()
        let valid = try #require(vectors["valid"]?.arrayValue)
        #expect(valid.count >= 10)
        for v in valid {
            let name = v["name"]?.stringValue ?? "?"
            let bytes = Self.hex(try #require(v["hex"]?.stringValue))
            let d = FrameDecoder(maxFrameBytes: 1 << 23, maxJSONBytes: 1 << 20)
            d.append(bytes)
            let frame = try #require(try d.next(), "\(name)")
            let envelope = try JSONParser.parse(frame.json)
            #expect(envelope == v["envelope"], "\(name)")
            #expect(frame.body == Self.hex(v["body_hex"]?.stringValue ?? ""), "\(name)")
            #expect(FrameEncoder.encode(json: envelope, body: frame.body) == bytes, "\(name) re-encodes byte for byte")
            if envelope["op"] != nil {
                #expect(throws: Never.self, "\(name)") { try RequestEnvelope.parse(frame.json) }
            } else {
                #expect(ReplyEnvelope.parse(envelope) != nil, "\(name) is a reply")
            }
        }
    }

    @Test func invalidFramesAreRefusedWithTheDocumentedCode() throws {
        let invalid = try #require(try Self.load()["invalid"]?.arrayValue)
        for v in invalid {
            let name = v["name"]?.stringValue ?? "?"
            let want = v["error"]?.stringValue
            let d = FrameDecoder(maxFrameBytes: 65536, maxJSONBytes: 65536)
            d.append(Self.hex(try #require(v["hex"]?.stringValue)))
            do {
                let frame = try #require(try d.next(), "\(name)")
                #expect(want == "invalid_argument", "\(name) framed fine, so its error must be a call error")
                #expect {
                    try RequestEnvelope.parse(frame.json)
                } throws: { error in
                    (error as? RequestEnvelope.Invalid)?.id == UInt64(v["reply_id"]?.intValue ?? -1)
                }
            } catch is FrameError {
                #expect(want == "protocol_error", "\(name)")
            }
        }
    }
}
