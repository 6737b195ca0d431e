import FerryProtocol

/// The daemon's counters as Prometheus metrics (`ferry stats --prometheus`, `--metrics-listen`): what `stats`
/// reports, named and typed as Prometheus expects (`_total` counters, `_bytes` and `_seconds` units, labels for
/// operation, code, tier), plus a latency histogram per operation. Reads the `stats` object the daemon builds, so
/// both views always agree.
///
/// ```swift
/// let text = MetricsReport.render(stats: report.json(), operations: router.counters)
/// // # TYPE ferry_requests_total counter
/// // ferry_requests_total{op="cache.get",code="ok"} 1200 …
/// ```
enum MetricsReport {
    static func render(stats: JSONObject, operations: [(String, OperationCounters)]) -> String {
        var t = PrometheusText()
        let s = JSONValue.object(stats)
        func n(_ v: JSONValue?) -> Double {
            switch v {
            case .int(let i)?: return Double(i)
            case .double(let d)?: return d
            case .bool(let b)?: return b ? 1 : 0
            default: return 0
            }
        }
        t.family("ferry_info", .gauge, "The daemon's version (the value is always 1).")
        t.sample("ferry_info", ["version": s["version"]?.stringValue ?? ""], 1.0)
        t.single("ferry_uptime_seconds", .gauge, "Seconds since the daemon started.", n(s["uptime_ms"]) / 1000)
        t.single("ferry_connections_open", .gauge, "Client connections open now.", n(s["connections"]?["open"]))
        t.single("ferry_connections_total", .counter, "Client connections accepted.", n(s["connections"]?["total"]))
        t.single("ferry_connections_rejected_total", .counter, "Client connections refused (limits, other users).", n(s["connections"]?["rejected"]))
        t.single("ferry_requests_in_flight", .gauge, "Requests being answered now.", n(s["requests"]?["in_flight"]))

        t.family("ferry_requests_total", .counter, "Requests by operation and result: ok, or the error code.")
        for (op, c) in operations {
            t.sample("ferry_requests_total", ["op": op, "code": "ok"], c.requests &- min(c.errors, c.requests))
            for code in ErrorCode.allCases where c.errorsByCode[code.index] > 0 {
                t.sample("ferry_requests_total", ["op": op, "code": code.rawValue], c.errorsByCode[code.index])
            }
        }
        t.family("ferry_request_duration_seconds", .histogram, "Time from reading a request to its final reply, by operation.")
        for (op, c) in operations {
            let cumulative = c.latency.cumulative
            for (i, bound) in LatencyHistogram.bounds.enumerated() {
                t.sample("ferry_request_duration_seconds_bucket", ["op": op, "le": PrometheusText.number(bound)], cumulative[i])
            }
            t.sample("ferry_request_duration_seconds_bucket", ["op": op, "le": "+Inf"], cumulative.last ?? 0)
            t.sample("ferry_request_duration_seconds_sum", ["op": op], Double(c.latency.sumNanoseconds) / 1e9)
            t.sample("ferry_request_duration_seconds_count", ["op": op], c.latency.count)
        }
        t.family("ferry_errors_total", .counter, "Errors by code, those of no request (a broken frame, a refused connection) included.")
        for code in ErrorCode.allCases { t.sample("ferry_errors_total", ["code": code.rawValue], n(s["errors"]?[code.rawValue])) }
        t.family("ferry_socket_bytes_total", .counter, "Bytes read from and written to client connections.")
        t.sample("ferry_socket_bytes_total", ["direction": "in"], n(s["bytes"]?["in"]))
        t.sample("ferry_socket_bytes_total", ["direction": "out"], n(s["bytes"]?["out"]))

        cache(&t, s["cache"], n)
        http(&t, s["fetch"], n)
        images(&t, s["image"], n)
        memory(&t, s["memory"], s["descriptors"], n)
        secondTier(&t, s["l2"], n)
        return t.output
    }

    private static func cache(_ t: inout PrometheusText, _ c: JSONValue?, _ n: (JSONValue?) -> Double) {
        t.family("ferry_cache_hits_total", .counter, "cache.get hits (and the HTTP cache's record reads) by tier.")
        t.sample("ferry_cache_hits_total", ["tier": "memory"], n(c?["memory_hits"]))
        t.sample("ferry_cache_hits_total", ["tier": "disk"], n(c?["disk_hits"]))
        t.sample("ferry_cache_hits_total", ["tier": "fleet"], n(c?["fleet_hits"]))
        t.single("ferry_cache_misses_total", .counter, "Reads of keys with no live value.", n(c?["misses"]))
        t.single("ferry_cache_sets_total", .counter, "Values stored.", n(c?["sets"]))
        t.family("ferry_cache_evictions_total", .counter, "Values evicted to stay within a budget, by tier.")
        t.sample("ferry_cache_evictions_total", ["tier": "memory"], n(c?["evictions"]?["memory"]))
        t.sample("ferry_cache_evictions_total", ["tier": "disk"], n(c?["evictions"]?["disk"]))
        t.single("ferry_cache_expirations_total", .counter, "Values that expired.", n(c?["expirations"]))
        t.single("ferry_cache_damaged_total", .counter, "Values read from disk that failed their checksum (answered as misses).", n(c?["damaged"]))
        for (name, help, key) in [("ferry_cache_bytes", "Bytes held, by tier.", "bytes"), ("ferry_cache_entries", "Entries held, by tier.", "entries"),
                                  ("ferry_cache_budget_bytes", "The budget of each tier.", "budget")] {
            t.family(name, .gauge, help)
            t.sample(name, ["tier": "memory"], n(c?["memory"]?[key]))
            t.sample(name, ["tier": "disk"], n(c?["disk"]?[key]))
        }
        t.single("ferry_cache_disk_full", .gauge, "1 while the disk is full (new values refused, reads and deletes served).", n(c?["disk"]?["full"]))
    }

    private static func http(_ t: inout PrometheusText, _ f: JSONValue?, _ n: (JSONValue?) -> Double) {
        t.family("ferry_http_requests_total", .counter, "fetch requests by how the shared HTTP cache answered them.")
        // The label is the fetch result's wire word (`CacheStatus`); the stats key its plural.
        for (status, key) in [(CacheStatus.hit, "hits"), (.miss, "misses"), (.revalidated, "revalidated"), (.stale, "stale"),
                              (.coalesced, "coalesced"), (.bypass, "bypass")] {
            t.sample("ferry_http_requests_total", ["cache": status.rawValue], n(f?[key]))
        }
        t.single("ferry_http_origin_requests_total", .counter, "Requests sent to origins.", n(f?["origin_requests"]))
        t.family("ferry_http_origin_requests_saved_total", .counter, "Requests that did not reach the origin: answered by the cache, or coalesced with one in flight.")
        t.sample("ferry_http_origin_requests_saved_total", ["by": "cache"], n(f?["hits"]) + n(f?["stale"]))
        t.sample("ferry_http_origin_requests_saved_total", ["by": "coalescing"], n(f?["coalesced"]))
        t.family("ferry_http_body_bytes_total", .counter, "Response body bytes served, by where they came from.")
        t.sample("ferry_http_body_bytes_total", ["source": "cache"], n(f?["bytes_from_cache"]))
        t.sample("ferry_http_body_bytes_total", ["source": "origin"], n(f?["bytes_from_origin"]))
        t.single("ferry_http_background_revalidations_total", .counter, "stale-while-revalidate refreshes.", n(f?["background_revalidations"]))
        t.single("ferry_http_resumed_total", .counter, "Downloads resumed from a stored part.", n(f?["resumed"]))
        t.single("ferry_http_transfers_active", .gauge, "Transfers with an origin now.", n(f?["transfers_active"]))
        t.single("ferry_http_transfers_waiting", .gauge, "Transfers waiting for a slot.", n(f?["transfers_waiting"]))
    }

    private static func images(_ t: inout PrometheusText, _ i: JSONValue?, _ n: (JSONValue?) -> Double) {
        guard let i else { return }
        t.family("ferry_image_hits_total", .counter, "image.get answered from memory or disk.")
        t.sample("ferry_image_hits_total", ["tier": "memory"], n(i["memory_hits"]))
        t.sample("ferry_image_hits_total", ["tier": "disk"], n(i["disk_hits"]))
        t.single("ferry_image_downloads_total", .counter, "Image downloads.", n(i["downloads"]))
        t.single("ferry_image_coalesced_total", .counter, "Image requests that joined a download in flight.", n(i["coalesced"]))
        t.single("ferry_image_variants_made_total", .counter, "Variants made (resized, re-encoded).", n(i["variants_made"]))
        t.family("ferry_image_variant_hits_total", .counter, "Variants found already made, by tier.")
        t.sample("ferry_image_variant_hits_total", ["tier": "memory"], n(i["variant_memory_hits"]))
        t.sample("ferry_image_variant_hits_total", ["tier": "store"], n(i["variant_store_hits"]))
        t.family("ferry_image_failures_total", .counter, "Images refused or failed, by kind.")
        for (kind, key) in [("invalid", "invalid"), ("oversized", "oversized"), ("decode", "decode_failures"), ("variant", "variant_failures")] {
            t.sample("ferry_image_failures_total", ["kind": kind], n(i[key]))
        }
        t.single("ferry_image_decode_seconds_total", .counter, "Time spent decoding, summed over the decoders.", n(i["decode_ms"]) / 1000)
        t.single("ferry_image_variant_seconds_total", .counter, "Time spent making variants, summed over the decoders.", n(i["variant_ms"]) / 1000)
        t.single("ferry_image_memory_bytes", .gauge, "Bytes of images held in memory.", n(i["bytes"]))
        t.single("ferry_image_memory_budget_bytes", .gauge, "The image memory tier's budget.", n(i["budget"]))
        t.single("ferry_image_entries", .gauge, "Images held in memory.", n(i["entries"]))
        t.single("ferry_image_evictions_total", .counter, "Images evicted from memory.", n(i["evictions"]))
        t.single("ferry_image_downloads_in_flight", .gauge, "Image downloads running now.", n(i["in_flight"]))
    }

    /// `--l2`'s Redis tier (zeros and `connected` 0 without one).
    private static func secondTier(_ t: inout PrometheusText, _ l: JSONValue?, _ n: (JSONValue?) -> Double) {
        t.single("ferry_l2_connected", .gauge, "1 while the Redis second tier is connected.", n(l?["connected"]))
        t.family("ferry_l2_reads_total", .counter, "HTTP cache reads that went to Redis, by result.")
        t.sample("ferry_l2_reads_total", ["result": "hit"], n(l?["hits"]))
        t.sample("ferry_l2_reads_total", ["result": "miss"], n(l?["misses"]))
        t.single("ferry_l2_writes_total", .counter, "Responses written to Redis.", n(l?["writes"]))
        t.single("ferry_l2_writes_dropped_total", .counter, "Writes not sent: too many in flight.", n(l?["dropped"]))
        t.single("ferry_l2_unavailable_total", .counter, "Redis commands unanswered (down, timed out).", n(l?["unavailable"]))
        t.single("ferry_l2_timeouts_total", .counter, "Redis commands past --l2-timeout.", n(l?["timeouts"]))
        t.single("ferry_l2_connections_total", .counter, "Connections made to Redis (the first and each reconnection).", n(l?["connections"]))
        t.family("ferry_l2_invalidations_total", .counter, "Invalidations published to the fleet, and received from it.")
        t.sample("ferry_l2_invalidations_total", ["direction": "sent"], n(l?["invalidations_sent"]))
        t.sample("ferry_l2_invalidations_total", ["direction": "received"], n(l?["invalidations_received"]))
        t.single("ferry_l2_redirections_total", .counter, "Redis Cluster redirections followed (MOVED, ASK).", n(l?["redirections"]))
        t.single("ferry_l2_body_hits_total", .counter, "Response bodies stored apart read from Redis.", n(l?["body_hits"]))
        let values = l?["values"]
        t.family("ferry_l2_values_total", .counter, "Shared cache namespaces and image variants in Redis, by event.")
        for event in ["hits", "misses", "writes", "dropped", "invalidations_received"] {
            t.sample("ferry_l2_values_total", ["event": event], n(values?[event]))
        }
        let leases = l?["leases"]
        t.family("ferry_l2_leases_total", .counter, "Cold misses claimed across the fleet, by outcome: won (fetched here), waited, looked_again (another machine's fetch served it), took_over, gave_up.")
        for outcome in ["won", "waits", "looked_again", "took_over", "gave_up"] {
            t.sample("ferry_l2_leases_total", ["outcome": outcome == "waits" ? "waited" : outcome], n(leases?[outcome]))
        }
    }

    private static func memory(_ t: inout PrometheusText, _ m: JSONValue?, _ d: JSONValue?, _ n: (JSONValue?) -> Double) {
        t.single("ferry_resident_memory_bytes", .gauge, "The daemon's resident set size.", n(m?["rss"]))
        t.family("ferry_buffer_bytes", .gauge, "Bytes in transit, by account (unwritten replies, arriving bodies, …).")
        if case .object(let accounts)? = m?["accounts"] {
            for (name, value) in accounts.members { t.sample("ferry_buffer_bytes", ["account": name], n(value)) }
        }
        t.single("ferry_buffer_limit_bytes", .gauge, "The budget of bytes in transit (--buffer-limit).", n(m?["buffer_limit"]))
        t.single("ferry_buffer_refusals_total", .counter, "Requests refused because the buffer budget was spent.", n(m?["buffer_refusals"]))
        t.single("ferry_descriptors_sent_total", .counter, "Bodies handed to clients as descriptors.", n(d?["sent"]))
        t.single("ferry_descriptor_bytes_total", .counter, "Bytes of bodies handed over as descriptors.", n(d?["bytes"]))
    }
}
