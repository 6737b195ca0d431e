import FerryClient
import FerryProtocol

/// `fetch-raw`: the fetch-hit load as wrk puts it on nginx — `--conns` connections, one request in flight each,
/// driven by one `poll()` loop (`runCacheLoad`) with frames written by hand. `fetch` measures what an application
/// pays through FerryClient (a reader thread and tasks per client); this measures the daemon, beside nginx measured
/// by a client of the same kind.
///
/// Every reply is checked: status 200, served from the cache (`hit`), and a body of the size the first fetch had.
struct FetchFrames: LoadFrames {
    let url: String
    let bodyBytes: Int

    /// `{"id":N,"op":"fetch","args":{"url":"…"}}`, the bytes `JSONWriter` would write for the same envelope.
    @inline(__always)
    func append(id: UInt64, key: Int = 0, to out: inout [UInt8]) {
        FrameEncoder.append(to: &out) { json in
            JSONWriter.appendASCII(#"{"id":"#, to: &json)
            JSONWriter.writeInt(Int64(id), to: &json)
            JSONWriter.appendASCII(#","op":"fetch","args":{"url":"#, to: &json)
            JSONWriter.writeString(url, to: &json)
            JSONWriter.appendASCII("}}", to: &json)
        }
    }

    var requestBytes: Int {
        var out: [UInt8] = []
        append(id: PingFrames.firstID, to: &out)
        return out.count
    }

    func check(_ frame: FrameView) throws(BenchError) -> UInt64 {
        switch ReplyEnvelope.parse(frame.json, maxDepth: 32) {
        case .result(let id, let result)?:
            if result["status"]?.intValue == 200, result["cache"]?["status"]?.stringValue == CacheStatus.hit.rawValue,
               frame.body.count == bodyBytes {
                return id
            }
        case .error(let id, let e)?:
            throw BenchError("fetch \(id) failed: \(e.codeName): \(e.message)")
        default:
            break
        }
        throw BenchError("unexpected reply to fetch: \(String(decoding: frame.json, as: UTF8.self)) with a \(frame.body.count)-byte body")
    }
}

/// `fetch-raw` against ferryd: the first fetch (through FerryClient) caches the URL and gives the body size every
/// reply is then checked against.
func runFetchRaw(socket: String, url: String, budget: Budget, connections: Int, pipeline: Int) async throws -> BenchResult {
    let client = try await FerryClient.connect(path: socket, clientName: "ferry-bench")
    let first = try await client.fetch(FetchRequest(url))
    client.close()
    guard first.status == 200 else { throw BenchError("\(url) answered \(first.status)") }
    let frames = FetchFrames(url: url, bodyBytes: first.body.count)
    var conns: [FerryLoadConnection<FetchFrames>] = []
    for _ in 0..<connections { conns.append(try FerryLoadConnection<FetchFrames>(socket: socket, frames: frames)) }
    var result = try runCacheLoad(conns, mode: "fetch-raw", budget: budget, pipeline: pipeline, keySpace: 1,
                                  extra: "body_bytes=\(first.body.count) cache=hit")
    result.replyBytes = first.body.count
    return result
}
