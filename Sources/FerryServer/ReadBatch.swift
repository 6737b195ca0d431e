import FerryCache
import FerryProtocol
import FerryStore

/// The requests read in one poll phase of the loop, answered together at its end, with their keys' memory asked
/// for ahead.
///
/// Why: at 50 connections a loop iteration reads ~50 requests, and a cache hit at 10,000 keys waits on two or three
/// cache misses in a row (the index bucket, the slot, the value: each request between two reads of a key runs the
/// kernel's socket code over other memory). Answered as each was read, every request paid its misses alone: a
/// daemon with 100 keys answered gets 30 % faster than one with 10,000 (same client, same run). Read first and
/// answered together, the misses of all of them are asked for before the first answer, and overlap.
///
/// How: a connection that has read a few small frames (`Connection.pipeDidRead`: `batchedReadBytes` or less in
/// its buffer) scans its next frame at once (`prescanNext`). A request with a valid key has its digest made and its
/// index bucket prefetched, and the connection joins `ConnectionTable.batch`; as the next one joins, the slot of
/// the one before it is asked for, and the value of the one before that (`prefetchAhead`: a pipeline across the
/// poll phase, each step a read's system call after the step it needs). A request without a key (a ping) is
/// handled at once: nothing to fetch ahead. At the end of the poll phase (the iteration hook, before replies are
/// flushed) `answerBatch` finishes the last steps and has each connection handle its frames in order, the first
/// with its scan (`Prescan`: not scanned or hashed again). A connection with more in its buffer handles it at once,
/// as before, so a large body is never held back; what was read before an end of stream, or before a signal that
/// stops the daemon (`Server.handle`), is handled before it. Each connection's frames are handled in the order they
/// came, with the same replies (`ReadBatchTests`); what moves is their place against other work of the same poll
/// phase: a disk or fetch completion posted to the loop may now be delivered before a request read earlier in that
/// phase (a race either way for the client, which matches replies by id).
///
/// Measured (`bench/`, medians of 20 interleaved rounds against the build before): cache.get at 50 × 1 and 10,000
/// keys +6 %, cache.set +4 %; pings and gets of 100 keys (nothing to miss) within 2 %.
///
/// ```swift
/// connection.joinBatch()        // in the read callback: scanned, its bucket prefetched (a ping: handled now)
/// table.answerBatch()           // once per iteration, before the flush
/// ```
struct Prescan {
    /// The frame's number on its connection (`FrameDecoder.delivered` when it is the next to be handled); -1: none.
    /// Not an optional `Prescan`: copying one in and out of an optional cost ~100 instructions a request.
    var frame = -1
    /// Whether the frame is of the hot shape: `envelope` is its scan (else the general path parses it).
    var isHot = false
    var envelope = HotEnvelope()
    /// The key's digest (`CacheKeyProbe.digest`), when the request names a valid key.
    var digest: Int?

    /// The scan and digest, once (the scan is spent). Asked when `frame` is the frame being handled.
    @inline(__always)
    mutating func take() -> (envelope: HotEnvelope?, digest: Int?) {
        frame = -1
        return (isHot ? envelope : nil, digest)
    }
}

extension Connection {
    /// A read leaving at most this much in the buffer joins the batch: a few small requests (~100 to 200 bytes
    /// each); more, or a body, is handled at once.
    static let batchedReadBytes = 4096

    /// Scans the next frame (if not yet) and enters the batch (once); handles its frames at once when the next one
    /// names no key (a ping: nothing to fetch ahead, and waiting gains nothing).
    func joinBatch() {
        if prescan.frame != decoder.delivered { prescanNext() }
        guard inBatch || (prescan.frame == decoder.delivered && prescan.digest != nil) else { return processFrames() }
        if !inBatch {
            inBatch = true
            table.prefetchAhead()
            table.batch.append(Unmanaged.passUnretained(self))
        }
    }

    /// Leaves the batch (closing: the batch holds no reference that would keep it).
    func leaveBatch() {
        guard inBatch else { return }
        inBatch = false
        table.batch.removeAll { $0.toOpaque() == Unmanaged.passUnretained(self).toOpaque() }
    }

    /// The hot-shape scan of `frame`, the next one handled, and its key's digest: the scan made as it was read or
    /// looked ahead at, else made now; none while an upload is open (as one is made: an upload its predecessor
    /// opened makes it a frame the general path reads). `slotAsked`: its slot was prefetched just now (see below),
    /// and its value may be once the slot has come (`prefetchValue`).
    @inline(__always)
    func hotScan(of frame: FrameView) -> (envelope: HotEnvelope?, digest: Int?, slotAsked: Bool) {
        guard uploads.isEmpty else { return (nil, nil, false) }
        // Not an optional chain: each optional of a scan copied it (~100 instructions a request).
        let number = decoder.delivered
        if prescan.frame == number {
            let (envelope, digest) = prescan.take()
            return (envelope, digest, false)
        }
        if prescanLater.frame == number {
            // Looked ahead at: its bucket was asked for while the frame before it was handled, so its slot can be
            // now, and comes while this frame's scan of the next one runs (a batch's pipeline asked for the slots
            // and values of its frames already).
            let (envelope, digest) = prescanLater.take()
            guard let digest, let prefetcher = table.prefetcher else { return (envelope, digest, false) }
            prefetcher._withUnsafeGuaranteedRef { $0.prefetchSlot(digest: digest) }
            return (envelope, digest, true)
        }
        return (HotEnvelope.scan(frame.json), nil, false)
    }

    /// The value of the key with this digest, whose slot was asked for a while ago (`hotScan`'s `slotAsked`): a
    /// get's reply copies it, a set's releases it. Measured with the slot's step (`bench/ab.sh`, medians of 16
    /// rounds, places swapped halfway): pipelined sets +3.1 % (CPU a set −3.9 %), pipelined gets +2.9 %.
    @inline(__always)
    func prefetchValue(digest: Int) {
        table.prefetcher?._withUnsafeGuaranteedRef { $0.prefetchValue(digest: digest) }
    }

    /// Scans the next whole frame into `prescan`, its key's bucket prefetched; nothing when none is whole or an
    /// upload is open (the next frame may continue it: `handleFrame` decides).
    private func prescanNext() {
        guard uploads.isEmpty else { return }
        let frame = decoder.delivered
        decoder.peekFrame { view in scan(view, frame: frame, into: &prescan) }
    }

    /// While frame `decoder.delivered` is handled, the one after it, if whole, into `prescanLater` (its bucket
    /// prefetched): a pipelined request's memory is asked for one request ahead (`handleFrame`). Only with the
    /// store's hints, and with no upload open.
    /// `current`: the bytes of the frame being handled (nothing follows it when the buffer holds no more: the
    /// common case, asked first).
    func lookAhead(past current: Int) {
        guard decoder.pendingBytes > current + ProtocolLimits.headerBytes else { return }
        let frame = decoder.delivered + 1
        guard table.prefetcher != nil, uploads.isEmpty, prescanLater.frame != frame else { return }
        decoder.peekFrame(from: current) { view in scan(view, frame: frame, into: &prescanLater) }
    }

    /// A frame's scan, and its key's digest and bucket prefetched when it names a valid key.
    private func scan(_ view: FrameView, frame: Int, into p: inout Prescan) {
        p.frame = frame
        p.digest = nil
        guard let hot = HotEnvelope.scan(view.json) else {
            p.isHot = false
            return
        }
        p.isHot = true
        p.envelope = hot
        if let prefetcher = table.prefetcher, let probe = HotRequest.probe(hot, view.json) {
            p.digest = probe.digest
            prefetcher._withUnsafeGuaranteedRef { $0.prefetchBucket(digest: probe.digest) }
        }
    }
}

extension ConnectionTable {
    /// Answers the batch: the last connections' later prefetch steps (`prefetchSteps`), then each connection's
    /// frames handled, in the order the connections read. Connections that read meanwhile (none do: reads come in
    /// the poll phase) would join the next batch.
    func answerBatch() {
        guard !batch.isEmpty else { return }
        swap(&batch, &answering)
        // The steps the connections after the last two would have asked for.
        prefetchSteps(&answering, at: answering.count)
        prefetchSteps(&answering, at: answering.count + 1)
        for connection in answering {
            connection._withUnsafeGuaranteedRef { c in
                // Closed meanwhile: it left the batch, and is not in this one either (`leaveBatch`).
                guard c.inBatch else { return }
                c.inBatch = false
                c.processFrames()
            }
        }
        answering.removeAll(keepingCapacity: true)
    }

    /// As a connection joins the batch (its bucket just asked for), the later steps of the ones before it.
    func prefetchAhead() { prefetchSteps(&batch, at: batch.count) }

    /// The steps due when `list[n]` joins (or would): the slot of `list[n - 1]` (whose bucket came in meanwhile: a
    /// read's system call and more lie between) and the value of `list[n - 2]`. A pipeline across the poll phase,
    /// each step a read after the one it needs. (`inout`, though it changes nothing: the list is reached in place,
    /// where a read of it retained and released it.)
    private func prefetchSteps(_ list: inout [Unmanaged<Connection>], at n: Int) {
        guard let prefetcher else { return }
        prefetcher._withUnsafeGuaranteedRef { store in
            if let d = Self.digest(list, n - 1) { store.prefetchSlot(digest: d) }
            if let d = Self.digest(list, n - 2) { store.prefetchValue(digest: d) }
        }
    }

    /// The digest scanned for `list[i]`'s next frame; nil past the list's ends.
    private static func digest(_ list: [Unmanaged<Connection>], _ i: Int) -> Int? {
        i >= 0 && i < list.count ? list[i]._withUnsafeGuaranteedRef { $0.prescan.digest } : nil
    }
}
