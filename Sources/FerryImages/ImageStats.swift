/// The loader's counters, as `stats` reports them under `image` (a snapshot taken on the actor).
///
/// ```swift
/// let s = await loader.snapshot()
/// s.memoryHits, s.downloads, s.bytes   // hits served from memory, downloads started, bytes held
/// ```
public struct ImageStats: Sendable {
    /// The memory tier's bounds now (a reload may change them).
    public var budget = 0
    public var maxEntries = 0
    public var memoryHits: UInt64 = 0
    public var diskHits: UInt64 = 0
    public var downloads: UInt64 = 0
    public var coalesced: UInt64 = 0
    public var cancelled: UInt64 = 0
    public var oversized: UInt64 = 0
    public var invalid: UInt64 = 0
    /// Images decoded to verify them (once per download), and how many of those failed.
    public var decodes: UInt64 = 0
    public var decodeFailures: UInt64 = 0
    /// Milliseconds spent decoding, summed over the pool's threads.
    public var decodeMs: Double = 0
    /// Downloads answered by the HTTP cache whose bytes had decoded before (their stored verdict): no decode.
    public var verdictsReused: UInt64 = 0
    /// Variants made (one resize each), found in the store, served from memory; milliseconds spent making them.
    public var variantsMade: UInt64 = 0
    public var variantStoreHits: UInt64 = 0
    public var variantMemoryHits: UInt64 = 0
    public var variantFailures: UInt64 = 0
    public var variantMs: Double = 0
    /// Variants waiting for a decoder (`ResizeSlots`).
    public var variantsWaiting = 0
    public var prefetched: UInt64 = 0
    public var bytesDownloaded: UInt64 = 0
    public var bytes = 0
    public var entries = 0
    public var memoryEvictions = 0
    public var inFlight = 0
    public var queued = 0
}
