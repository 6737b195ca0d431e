import CCurl
import FerryLoop

/// libcurl's multi interface driven by the daemon's libuv loop, in the shape of curl's `multi-uv.c`: libcurl says
/// which sockets to watch (`CURLMOPT_SOCKETFUNCTION` → one `uv_poll` per socket) and when to call it back
/// (`CURLMOPT_TIMERFUNCTION` → one `uv_timer`); after every `curl_multi_socket_action` the finished transfers are
/// collected. Loop thread only; every transfer of every client shares its connection pool (keep-alive, HTTP/2
/// multiplexing) and its per-host and total connection limits, beyond which libcurl queues transfers in order.
///
/// ```swift
/// let multi = try CurlMulti(loop: loop, maxPerHost: 6, maxTotal: 64)
/// multi.add(transfer)          // transfer.finish(code) runs when it is done
/// multi.remove(transfer)       // cancel: libcurl drops it, no callback
/// ```
final class CurlMulti {
    let handle: UnsafeMutableRawPointer
    private let loop: EventLoop
    private var timer: LoopTimer!
    private var polls: [curl_socket_t: LoopPoll] = [:]
    private var transfers: [UInt: Transfer] = [:]
    private var isClosed = false
    /// Body bytes the running transfers hold in memory (their spools' memory parts and write buffers: a body
    /// past `BodySpool.Config.memoryBytes` is on disk), as of the last time each was looked at.
    private(set) var bodyBytes = 0
    private var counted: [UInt: Int] = [:]
    /// Transfers whose callbacks gathered something to announce once libcurl returns (`deliverEvents`).
    private var touched: [Transfer] = []
    private var touchedKeys = Set<UInt>()
    /// Transfers whose spool held a wake back: announced again 10 ms on, so readers never wait for the next bytes.
    private var heldBack: [UInt: Transfer] = [:]
    private var wakeTimer: LoopTimer!
    /// Paused transfers whose readers made room: unpaused from the loop (`resumeTimer`), never from inside a
    /// reader's read or a libcurl callback (unpausing runs the write callback at once).
    private var resuming: [Transfer] = []
    private var resumeTimer: LoopTimer!
    /// Paused transfers and when each paused: one waiting longer than its spool's `maxPauseMs` stops streaming
    /// (its reader's unread bytes go to a file) and goes on (`pauseTimer`).
    private var pausedSince: [UInt: (transfer: Transfer, ms: Int64)] = [:]
    private var pauseTimer: LoopTimer!

    init(loop: EventLoop, maxPerHost: Int, maxTotal: Int) throws(FetchFailure) {
        try CurlMulti.globalInit()
        guard let m = curl_multi_init() else { throw .internalError("curl_multi_init failed") }
        handle = m
        self.loop = loop
        let me = Unmanaged.passUnretained(self).toOpaque()
        ferry_multi_long(m, CURLMOPT_MAX_HOST_CONNECTIONS, maxPerHost)
        ferry_multi_long(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxTotal)
        ferry_multi_long(m, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        ferry_multi_ptr(m, CURLMOPT_SOCKETDATA, me)
        ferry_multi_ptr(m, CURLMOPT_TIMERDATA, me)
        ferry_multi_socket_cb(m, { _, socket, what, user, _ in
            Unmanaged<CurlMulti>.fromOpaque(user!).takeUnretainedValue().watch(socket, what)
            return 0
        })
        ferry_multi_timer_cb(m, { _, timeoutMs, user in
            Unmanaged<CurlMulti>.fromOpaque(user!).takeUnretainedValue().arm(timeoutMs)
            return 0
        })
        timer = LoopTimer(loop: loop) { [unowned self] _ in self.action(CURL_SOCKET_TIMEOUT, 0) }
        wakeTimer = LoopTimer(loop: loop) { [unowned self] _ in
            let again = heldBack.values
            heldBack.removeAll()
            for t in again where transfers[t.key] != nil { touch(t) }
            deliverTouched()
        }
        resumeTimer = LoopTimer(loop: loop) { [unowned self] _ in unpauseResuming() }
        pauseTimer = LoopTimer(loop: loop) { [unowned self] _ in endLongPauses() }
    }

    /// `curl_global_init` once per process, before any other thread could call libcurl.
    private static let globalResult: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    private static func globalInit() throws(FetchFailure) {
        guard globalResult == CURLE_OK else { throw .internalError("curl_global_init failed (\(globalResult.rawValue))") }
    }

    var activeTransfers: Int { transfers.count }

    /// Starts a transfer; its `finish` runs on this loop when it completes or fails.
    func add(_ transfer: Transfer) {
        // Work can still arrive while the daemon stops (a lookup's completion in the mailbox): never touch a
        // cleaned-up multi handle.
        guard !isClosed else { return transfer.finish(CURLE_ABORTED_BY_CALLBACK, message: "the daemon is stopping") }
        transfers[transfer.key] = transfer
        transfer.onTouched = { [unowned self] t in touch(t) }
        transfer.onResume = { [unowned self] t in
            if resuming.isEmpty { resumeTimer.start(afterMs: 0) }
            resuming.append(t)
        }
        transfer.onPause = { [unowned self] t in
            if pausedSince.isEmpty { pauseTimer.start(afterMs: UInt64(max(1, t.spool.config.maxPauseMs))) }
            pausedSince[t.key] = (t, Int64(loop.nowMs))
        }
        let rc = curl_multi_add_handle(handle, transfer.easy)
        if rc != CURLM_OK {
            transfers[transfer.key] = nil
            transfer.finish(CURLE_FAILED_INIT, message: String(cString: curl_multi_strerror(rc)))
        }
    }

    /// Stops a transfer without finishing it (its owner cancelled).
    func remove(_ transfer: Transfer) {
        transfer.silence()
        guard transfers.removeValue(forKey: transfer.key) != nil else { return }
        curl_multi_remove_handle(handle, transfer.easy)
        ended(transfer)
    }

    /// Unpauses the transfers whose readers made room. libcurl hands over the bytes it kept (the write callback
    /// runs inside `curl_easy_pause`) and asks to be called again at once, so the origin is read again.
    private func unpauseResuming() {
        guard !isClosed else { return }
        let batch = resuming
        resuming.removeAll()
        for t in batch where transfers[t.key] != nil {
            pausedSince[t.key] = nil
            let rc = curl_easy_pause(t.easy, Int32(CURLPAUSE_CONT))
            // The bytes libcurl kept could not be handed over: the transfer fails with libcurl's reason.
            if rc != CURLE_OK, transfers.removeValue(forKey: t.key) != nil { finishRemoved(t, rc) }
        }
        collectFinished()
        deliverTouched()
    }

    /// Transfers paused longer than their spool allows stop streaming (the unread bytes to a file), which
    /// unpauses them; the timer is armed again for the next one due.
    private func endLongPauses() {
        let now = Int64(loop.nowMs)
        var nextDue: Int64?
        for (key, entry) in pausedSince {
            guard transfers[key] != nil else {
                pausedSince[key] = nil
                continue
            }
            let due = entry.ms + entry.transfer.spool.config.maxPauseMs
            if due <= now {
                pausedSince[key] = nil
                entry.transfer.spool.stopStreaming()
            } else {
                nextDue = min(nextDue ?? due, due)
            }
        }
        if let nextDue { pauseTimer.start(afterMs: UInt64(max(1, nextDue - now))) }
    }

    private func touch(_ t: Transfer) {
        if touchedKeys.insert(t.key).inserted { touched.append(t) }
    }

    /// A transfer ended: its bytes leave the count.
    private func ended(_ transfer: Transfer) {
        bodyBytes -= counted.removeValue(forKey: transfer.key) ?? 0
        heldBack[transfer.key] = nil
        pausedSince[transfer.key] = nil
    }

    /// Announces what libcurl's callbacks gathered (heads, body growth), now that libcurl has returned, and counts
    /// the memory the bodies hold.
    private func deliverTouched() {
        while !touched.isEmpty {
            let batch = touched
            touched.removeAll()
            touchedKeys.removeAll()
            for t in batch where transfers[t.key] != nil {
                let memory = t.memoryBytes
                bodyBytes += memory - (counted.updateValue(memory, forKey: t.key) ?? 0)
                if t.deliverEvents() {
                    if heldBack.isEmpty { wakeTimer.start(afterMs: UInt64(BodySpool.wakeAfterMs)) }
                    heldBack[t.key] = t
                }
            }
        }
    }

    /// Cancels every transfer and frees the handles (daemon stop).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        for transfer in transfers.values {
            curl_multi_remove_handle(handle, transfer.easy)
            transfer.finish(CURLE_ABORTED_BY_CALLBACK, message: "the daemon is stopping")
        }
        transfers.removeAll()
        for (_, poll) in polls { poll.close() }
        polls.removeAll()
        timer.close()
        wakeTimer.close()
        resumeTimer.close()
        pauseTimer.close()
        curl_multi_cleanup(handle)
    }

    // MARK: libcurl → libuv

    /// CURLMOPT_SOCKETFUNCTION: start, change or stop watching one socket.
    private func watch(_ socket: curl_socket_t, _ what: Int32) {
        if what == CURL_POLL_REMOVE {
            polls.removeValue(forKey: socket)?.close()
            return
        }
        let poll: LoopPoll
        if let existing = polls[socket] {
            poll = existing
        } else {
            guard let made = LoopPoll(loop: loop, socket: socket, { [unowned self] status, events in
                var flags: Int32 = 0
                if status < 0 {
                    flags = CURL_CSELECT_ERR
                } else {
                    if events.contains(.readable) { flags |= CURL_CSELECT_IN }
                    if events.contains(.writable) { flags |= CURL_CSELECT_OUT }
                }
                action(socket, flags)
            }) else {
                return  // libcurl's own timeout then fails the transfer
            }
            poll = made
            polls[socket] = poll
        }
        var events: LoopPoll.Events = []
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { events.insert(.readable) }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { events.insert(.writable) }
        poll.start(events)
    }

    /// CURLMOPT_TIMERFUNCTION: -1 stops the timer; 0 means "call me soon" — from the loop, never from inside this
    /// callback (libcurl forbids re-entry).
    private func arm(_ timeoutMs: Int) {
        if timeoutMs < 0 { timer.stop() } else { timer.start(afterMs: UInt64(timeoutMs)) }
    }

    private func action(_ socket: curl_socket_t, _ flags: Int32) {
        guard !isClosed else { return }
        var running: Int32 = 0
        curl_multi_socket_action(handle, socket, flags, &running)
        collectFinished()
        deliverTouched()
    }

    /// Hands every finished transfer its result; the transfer's owner may start new ones from `finish`.
    private func collectFinished() {
        var left: Int32 = 0
        while let msg = curl_multi_info_read(handle, &left) {
            guard ferry_msg_is_done(msg) != 0, let easy = ferry_msg_easy(msg) else { continue }
            let code = ferry_msg_result(msg)
            let key = UInt(bitPattern: ferry_info_private(easy))
            guard let transfer = transfers.removeValue(forKey: key) else {
                curl_multi_remove_handle(handle, easy)
                continue
            }
            finishRemoved(transfer, code)
        }
    }

    /// A transfer that ended, already out of `transfers`: out of the multi, then its result.
    private func finishRemoved(_ transfer: Transfer, _ code: CURLcode) {
        curl_multi_remove_handle(handle, transfer.easy)
        ended(transfer)
        transfer.finish(code, message: nil)
    }
}
