/// A body nothing keeps, streamed through memory to its one reader (`BodySpool.streamThrough`): the window of
/// unread pieces (`StreamWindow`), the feeder told to wait while it is full (`isWindowFull`, `whenRoom`), and the
/// ways out to the spool file (`stopStreaming`) or to nowhere (`discardUnread`). Loop thread only, as the spool.
///
/// ```swift
/// spool.streamThrough()                       // before the body passes memoryBytes
/// if spool.isWindowFull { spool.whenRoom { resumeTransfer() } }   // the feeder waits for its reader
/// spool.stopStreaming()                       // the reader stalled: the unread bytes go to the file
/// ```
extension BodySpool {
    /// Nothing keeps this body and one reader follows it from its start, in order (a transfer of its own whose
    /// response is not stored): past `memoryBytes` the body stays in memory, each piece let go once that reader
    /// has read past it, instead of being written to a file and read back. Why: a 1 GiB download nothing keeps
    /// spent a quarter of ferryd's time writing the file and another twentieth unlinking it (perf). A reader more
    /// than `windowBytes` behind sends the rest to a file as before; a second reader, or one going back, fails.
    /// Before the body leaves memory; later it changes nothing.
    public func streamThrough() {
        guard state == .receiving, fd < 0, prefilled == 0 else { return }
        streams = true
    }

    /// The one reader of a streamed body is `windowBytes` behind: the feeder waits (`whenRoom`) before appending.
    public var isWindowFull: Bool { !discarding && (window?.unreadBytes ?? 0) >= config.windowBytes }

    /// Runs `resume` once, when the reader of a full window has read half of it (or nobody reads any more).
    public func whenRoom(_ resume: @escaping () -> Void) {
        guard isWindowFull, state == .receiving else { return resume() }
        onRoom = resume
    }

    /// Runs the waiting feeder's `resume` once the reader has read half the window, or nobody reads any more.
    func roomMade() {
        guard let resume = onRoom, discarding || (window?.unreadBytes ?? 0) <= config.windowBytes / 2 else { return }
        onRoom = nil
        resume()
    }

    /// The one reader of a streamed body will not read it (its job follows a redirect instead): what is held goes,
    /// what comes is only counted, and a feeder waiting for room goes on. A body that does not stream is kept.
    public func discardUnread() {
        guard streams || window != nil, state == .receiving else { return }
        discarding = true
        window = nil
        memory = []
        roomMade()
    }

    /// `append` past `memoryBytes` of a body that streams: into the window, or past twice it into a file.
    func appendToWindow(_ bytes: UnsafeRawBufferPointer) -> FetchFailure? {
        if window == nil {
            window = StreamWindow(start: 0, pieceBytes: config.memoryBytes, first: memory)
            memory = []
        }
        window!.append(bytes)
        length = window!.end
        guard window!.unreadBytes > 2 * config.windowBytes else { return nil }
        return stopStreaming()
    }

    /// The reader of a streamed body fell behind (a feeder that does not wait filled twice the window, or the
    /// transfer waited `maxPauseMs`), or the transfer ended with more than `memoryBytes` unread: what it has not
    /// read goes to a file, the body continues there (the reader reads on from where it is), and a paused feeder
    /// goes on. Nothing without a spool directory.
    @discardableResult
    public func stopStreaming() -> FetchFailure? {
        guard var unreadWindow = window, config.directory != nil else { return nil }
        let unread = unreadWindow.takeUnread()
        window = nil
        streams = false
        fileBase = unread.start
        if let failure = spill(writing: unread.pieces) { return fail(failure) }
        roomMade()
        return nil
    }
}
