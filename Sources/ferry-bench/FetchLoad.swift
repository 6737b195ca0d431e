import FerryClient
import FerryProtocol

/// `fetch`: `--conns` FerryClients (one connection and one task each: separate clients, as separate programs would
/// be) fetching `--url` in a loop. Against a URL ferryd has cached, this is the cache-hit path the issue compares with
/// nginx serving the same file; with `--conns 1` and a large body it measures bytes per second through the socket.
/// Every reply is checked: status 200 and the body size of the first reply.
///
/// `body`: through the socket, or (large bodies) as a descriptor read into memory, or mapped with every page touched.
func runFetch(socket: String, url: String, budget: Budget, connections: Int, body: BodyPath) async throws -> BenchResult {
    let clients = try await connectClients(socket: socket, count: connections, bodyFiles: body != .socket)
    var plain = FetchRequest(url)
    plain.bodyAsFile = body == .map || body == .fd
    let request = plain
    defer { for c in clients { c.close() } }
    let expected = try await clients[0].fetch(FetchRequest(url))
    guard expected.status == 200 else { throw BenchError("\(url) answered \(expected.status)") }
    let size = expected.body.count

    let start = monoNanos()
    let running = budget.started(at: start)
    let latencies = try await withThrowingTaskGroup(of: LatencySamples.self) { group in
        for client in clients {
            group.addTask {
                var samples = LatencySamples(expected: 1 << 14)
                var issued = 0
                while running.allowsMore(issued: issued * connections) {
                    let t0 = monoNanos()
                    let r = try await client.fetch(request)
                    let got = try r.file.map { file in body == .fd ? file.length : try file.withBytes(touchPages) } ?? r.body.count
                    guard r.status == 200, got == size else {
                        throw BenchError("reply \(r.status) with \(got) bytes, expected 200 with \(size)")
                    }
                    samples.record(monoNanos() - t0)
                    issued += 1
                }
                return samples
            }
        }
        var all = LatencySamples()
        for try await samples in group { all.merge(samples) }
        return all
    }
    let elapsed = monoNanos() - start
    var result = BenchResult(mode: "fetch", requests: latencies.count, elapsedNanos: elapsed, latencies: latencies,
                             requestBytes: 0, replyBytes: size, connections: connections, inFlight: 1)
    let mbPerSecond = Double(size) * result.opsPerSecond / 1e6
    result.extra = "body_bytes=\(size) mb_per_s=\(decimal(mbPerSecond, 1)) cache=\(expected.cacheStatus?.rawValue ?? "") body=\(body.rawValue)"
    return result
}

/// Reads one byte of every page of a mapped body (so a mapping is paid for in full); returns the body's size.
private func touchPages(_ bytes: UnsafeRawBufferPointer) -> Int {
    var sum: UInt8 = 0
    var i = 0
    while i < bytes.count {
        sum &+= bytes[i]
        i += 4096
    }
    return bytes.count + Int(sum & 0)
}

/// `fetch-storm`: `--conns` clients connect, then all fetch `--url` at the same moment, once. The script reads the
/// origin's request counter afterwards: with a cold, cacheable URL it should have seen one request.
func runFetchStorm(socket: String, url: String, connections: Int) async throws -> BenchResult {
    let clients = try await connectClients(socket: socket, count: connections)
    defer { for c in clients { c.close() } }
    let start = monoNanos()
    let (latencies, statuses) = try await withThrowingTaskGroup(of: (UInt64, String).self) { group in
        for client in clients {
            group.addTask {
                let r = try await client.fetch(FetchRequest(url))
                guard r.status == 200 else { throw BenchError("\(url) answered \(r.status)") }
                return (monoNanos() - start, r.cacheStatus?.rawValue ?? "")
            }
        }
        var all = LatencySamples()
        var statuses: [String: Int] = [:]
        for try await (t, s) in group {
            all.record(t)
            statuses[s, default: 0] += 1
        }
        return (all, statuses)
    }
    var result = BenchResult(mode: "fetch-storm", requests: latencies.count, elapsedNanos: monoNanos() - start,
                             latencies: latencies, requestBytes: 0, replyBytes: 0, connections: connections, inFlight: 1)
    result.extra = statuses.keys.sorted().map { "cache_\($0)=\(statuses[$0]!)" }.joined(separator: " ")
    return result
}

/// `image`: `--conns` FerryClients each calling `image.get` for `--url` in a loop (memory hits once the loader has
/// it). With `--distinct`, every request asks for a URL of its own (`url&n=K`, K counting up across clients), which
/// measures disk hits after a restart, or streams many different images through the loader. Every reply is checked
/// against the first one's format and size.
///
/// With a `variant`, every request asks for it (of its own URL with `--distinct`); `--distinct-variants` varies the
/// variant instead (widths 1…100 above the one asked, in turn) of the one URL, which measures variants made per
/// second from an original in memory.
func runImage(socket: String, url: String, budget: Budget, connections: Int, distinct distinctURLs: Bool,
              distinctVariants: Bool, variant: ImageVariant?) async throws -> BenchResult {
    let clients = try await connectClients(socket: socket, count: connections)
    defer { for c in clients { c.close() } }
    let separator = url.contains("?") ? "&" : "?"
    let counter = Tickets()
    let distinct = distinctURLs || distinctVariants
    func target() -> (String, ImageVariant?) {
        guard distinct else { return (url, variant) }
        let n = counter.next.add(1, ordering: .relaxed).oldValue
        guard distinctVariants, var v = variant else { return (url + separator + "n=\(n)", variant) }
        // 100 widths above the one asked: one shrink-on-load factor for all of them, as a fixed-size tool has.
        v.width = (v.width ?? 100) + 1 + n % 100
        return (url, v)
    }
    let first = try await clients[0].image(distinctURLs ? url + separator + "n=probe" : url, variant: variant)
    let size = first.bytes.count
    let start = monoNanos()
    let running = budget.started(at: start)
    let (latencies, sources) = try await withThrowingTaskGroup(of: (LatencySamples, [String: Int]).self) { group in
        for client in clients {
            group.addTask {
                var samples = LatencySamples(expected: 1 << 14)
                var sources: [String: Int] = [:]
                while running.allowsMore(issued: distinct ? counter.next.load(ordering: .relaxed) : samples.count * connections) {
                    let t0 = monoNanos()
                    let (u, v) = target()
                    let image = try await client.image(u, variant: v)
                    guard (distinctVariants && image.format == first.format) || (image.bytes.count == size && image.format == first.format) else {
                        throw BenchError("image of \(image.bytes.count) bytes (\(image.format)), expected \(size) (\(first.format))")
                    }
                    samples.record(monoNanos() - t0)
                    sources[image.source?.rawValue ?? "", default: 0] += 1
                }
                return (samples, sources)
            }
        }
        var all = LatencySamples()
        var sources: [String: Int] = [:]
        for try await (samples, s) in group {
            all.merge(samples)
            for (k, v) in s { sources[k, default: 0] += v }
        }
        return (all, sources)
    }
    var result = BenchResult(mode: "image", requests: latencies.count, elapsedNanos: monoNanos() - start, latencies: latencies,
                             requestBytes: 0, replyBytes: size, connections: connections, inFlight: 1)
    let mb = Double(size) * result.opsPerSecond / 1e6
    result.extra = "body_bytes=\(size) mb_per_s=\(decimal(mb, 1)) format=\(first.format) "
        + sources.keys.sorted().map { "source_\($0)=\(sources[$0]!)" }.joined(separator: " ")
    return result
}

/// `count` separate clients (one connection each), as separate programs would be.
private func connectClients(socket: String, count: Int, bodyFiles: Bool = true) async throws -> [FerryClient] {
    var clients: [FerryClient] = []
    for _ in 0..<count { clients.append(try await FerryClient.connect(path: socket, clientName: "ferry-bench", bodyFiles: bodyFiles)) }
    return clients
}
