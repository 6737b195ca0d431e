import FerryImages
import FerryProtocol

extension ImageError {
    /// The protocol error a client gets for this failure.
    ///
    /// ```swift
    /// ImageError.httpStatus(404, url: u).wireError.code   // .notFound
    /// ```
    var wireError: WireError {
        switch self {
        case .invalidImage(let e):
            switch e {
            case .notAnImage(let m): return WireError(.invalidImage, "not an image: \(m)")
            case .truncated(let m): return WireError(.invalidImage, "truncated image: \(m)")
            case .tooLarge(let w, let h, let limit):
                return WireError(.invalidImage, "the image is \(w)×\(h) pixels, more than the limit of \(limit)",
                                 details: ["width": .int(Int64(w)), "height": .int(Int64(h)), "max_pixels": .int(Int64(limit))])
            }
        case .decode(let e):
            switch e {
            case .unknownFormat(let m): return WireError(.invalidImage, "not an image: \(m)")
            case .refusedFormat(let m): return WireError(.invalidImage, m)
            case .undecodable(let m): return WireError(.invalidImage, "the image does not decode: \(m)")
            case .tooLarge(let w, let h, let pages, let limit):
                let frames = pages > 1 ? " × \(pages) frames" : ""
                return WireError(.invalidImage, "the image is \(w)×\(h)\(frames) pixels, more than the limit of \(limit)",
                                 details: ["width": .int(Int64(w)), "height": .int(Int64(h)), "max_pixels": .int(Int64(limit))])
            case .unavailable(let m): return WireError(.unavailable, "images cannot be decoded: \(m)")
            case .cancelled: return WireError(.cancelled, "cancelled")
            }
        case .fetch(let e): return e
        case .httpStatus(let status, let url):
            return WireError(status == 404 || status == 410 ? .notFound : .unavailable,
                             "the origin answered \(status) for \(url.truncatedForMessages)", details: ["status": .int(Int64(status))])
        case .cancelled: return WireError(.cancelled, "cancelled")
        }
    }
}

extension ImageStats {
    /// The `image` object of `stats`.
    func json(budget: Int, maxEntries: Int) -> JSONObject {
        ["memory_hits": .int(Int64(memoryHits)), "disk_hits": .int(Int64(diskHits)), "downloads": .int(Int64(downloads)),
         "coalesced": .int(Int64(coalesced)), "cancelled": .int(Int64(cancelled)), "oversized": .int(Int64(oversized)),
         "invalid": .int(Int64(invalid)), "prefetched": .int(Int64(prefetched)), "verdicts_reused": .int(Int64(verdictsReused)),
         "decodes": .int(Int64(decodes)), "decode_failures": .int(Int64(decodeFailures)), "decode_ms": .double(decodeMs),
         "variants_made": .int(Int64(variantsMade)), "variant_store_hits": .int(Int64(variantStoreHits)),
         "variant_memory_hits": .int(Int64(variantMemoryHits)), "variant_failures": .int(Int64(variantFailures)),
         "variant_ms": .double(variantMs), "variants_waiting": .int(Int64(variantsWaiting)),
         "bytes_downloaded": .int(Int64(bytesDownloaded)), "bytes": .int(Int64(bytes)), "entries": .int(Int64(entries)),
         "evictions": .int(Int64(memoryEvictions)), "in_flight": .int(Int64(inFlight)), "queued": .int(Int64(queued)),
         "budget": .int(Int64(budget)), "max_entries": .int(Int64(maxEntries))]
    }
}
