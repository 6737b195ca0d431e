import CCurl
import FerryLoop
import FerryHTTPCache

/// One HTTP exchange with an origin: a single request and its response, never following redirects (the fetch
/// pipeline follows them itself, so that every hop goes through the cache). Owns its libcurl easy handle. The body
/// goes into its `BodySpool` from libcurl's write callback; the head and the spool's growth are announced later,
/// by `CurlMulti` once libcurl has returned (`deliverEvents`), so that owners may cancel from them.
///
/// ```swift
/// let t = try Transfer(request, body: spool, events: events, caFile: nil)
/// multi.add(t)
/// ```
final class Transfer {
    /// Transfer ids for libcurl's private pointer; only the loop thread creates transfers.
    nonisolated(unsafe) private static var nextKey: UInt = 1
    let key: UInt
    let easy: UnsafeMutableRawPointer
    let request: OriginRequest
    private var headerList: UnsafeMutablePointer<curl_slist>?
    let spool: BodySpool
    /// Body bytes held in memory (the spool's memory part or write buffer), for `stats`.
    var memoryBytes: Int { spool.memoryBytes }
    /// The spool could not keep a piece: the transfer stops with this failure.
    private var spoolFailure: FetchFailure?
    /// The response used a content coding libcurl does not decode (stopped at its head).
    private var undecodable = false
    private var status = 0
    private var headers: [(String, String)] = []
    private var exceeded = false
    /// Response header bytes so far (all responses of the exchange, 1xx included), and whether they passed the limit.
    private var headerBytes = 0
    private var headersExceeded = false
    private var bodyStarted = false
    /// The most response header ferryd takes from an origin, every field together.
    static let maxHeaderBytes = 256 * 1024
    private var requestTime: Int64
    private var responseTime: Int64 = 0
    private var events: OriginEvents?
    /// The final response's head is complete (the blank line after a non-1xx status), and whether it was announced.
    private var headIsIn = false
    private var headDelivered = false
    /// Called by libcurl's callbacks when there is something to announce after libcurl returns (`CurlMulti`).
    var onTouched: (Transfer) -> Void = { _ in }
    /// Called when a transfer the write callback paused (its spool's window was full) may go on (`CurlMulti`).
    var onResume: (Transfer) -> Void = { _ in }
    /// Called when the write callback pauses the transfer (`CurlMulti` bounds how long).
    var onPause: (Transfer) -> Void = { _ in }
    /// Whether the write callback may pause the transfer: over HTTP/1.x, with a body libcurl does not decode.
    /// Why not otherwise: libcurl 7.88 keeps what a paused decoder still produces (a 128 KiB read of a gzip body
    /// may inflate to megabytes) in a buffer outside every limit here, and pausing one stream of a shared HTTP/2
    /// connection has had bugs there; such a body's window goes to a file past twice its size instead.
    private lazy var pausable: Bool = {
        let version = ferry_info_long(easy, CURLINFO_HTTP_VERSION)
        let decoding = request.decodes && headers.contains { $0.0.lowercased() == "content-encoding" }
        return (version == CURL_HTTP_VERSION_1_0 || version == CURL_HTTP_VERSION_1_1) && !decoding
    }()
    /// Called with (received, total if known) as the body arrives.
    var onProgress: ((Int, Int?) -> Void)?

    init(_ request: OriginRequest, body: BodySpool, events: OriginEvents, caFile: String?,
         connectTimeoutMs: Int = 30_000) throws(FetchFailure) {
        guard let easy = curl_easy_init() else { throw .internalError("curl_easy_init failed") }
        self.easy = easy
        self.request = request
        spool = body
        key = Transfer.nextKey
        Transfer.nextKey += 1
        requestTime = WallClock.nowMs() / 1000
        self.events = events
        try configure(caFile: caFile, connectTimeoutMs: connectTimeoutMs)
    }

    deinit {
        curl_easy_cleanup(easy)
        if let headerList { curl_slist_free_all(headerList) }
    }

    private func configure(caFile: String?, connectTimeoutMs: Int) throws(FetchFailure) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        func check(_ rc: CURLcode, _ what: String) throws(FetchFailure) {
            if rc != CURLE_OK { throw .invalidArgument("\(what): \(String(cString: curl_easy_strerror(rc)))") }
        }
        try check(ferry_easy_str(easy, CURLOPT_URL, request.url), "url")
        // Only http and https, for the request and (were libcurl to follow one) every redirect.
        try check(ferry_easy_str(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        ferry_easy_str(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        ferry_easy_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        ferry_easy_long(easy, CURLOPT_NOSIGNAL, 1)
        // Larger reads from the origin's socket: a fast download takes a quarter of the callbacks (and of the
        // spool's appends) it would at libcurl's 16 KiB.
        ferry_easy_long(easy, CURLOPT_BUFFERSIZE, 128 * 1024)
        ferry_easy_ptr(easy, CURLOPT_PRIVATE, UnsafeMutableRawPointer(bitPattern: key))
        if request.decodes {
            // "" = every encoding this libcurl decodes; the body is handed over decoded.
            ferry_easy_str(easy, CURLOPT_ACCEPT_ENCODING, "")
        } else {
            // The bytes as the origin sent them, with their Content-Encoding (the client's own Accept-Encoding,
            // or a coding libcurl does not know).
            ferry_easy_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 0)
        }
        ferry_easy_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        // Over TLS (where HTTP/2 is negotiated), wait for a connection being made to this origin to say whether it
        // multiplexes, rather than open one of its own: 100 requests at once to an HTTP/2 origin share one
        // connection. Not for plain http (HTTP/1.1 here): there it would wait behind busy connections.
        if request.url.lowercased().hasPrefix("https:") { ferry_easy_long(easy, CURLOPT_PIPEWAIT, 1) }
        if let caFile {
            // An extra trust anchor next to the system store (OpenSSL reads both the file and the directory).
            ferry_easy_str(easy, CURLOPT_CAINFO, caFile)
            ferry_easy_str(easy, CURLOPT_CAPATH, "/etc/ssl/certs")
        }
        switch request.tls {
        case .system: break
        case .insecure:
            ferry_easy_long(easy, CURLOPT_SSL_VERIFYPEER, 0)
            ferry_easy_long(easy, CURLOPT_SSL_VERIFYHOST, 0)
        case .pem(let pem):
            // The client's CA certificates only (as curl's --cacert): not the system store besides.
            try check(pem.withUnsafeBytes { ferry_easy_blob(easy, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count) }, "ca_pem")
            ferry_easy_str(easy, CURLOPT_CAPATH, nil)
        }
        if let ms = request.timeoutMs { ferry_easy_long(easy, CURLOPT_TIMEOUT_MS, max(1, ms)) }
        ferry_easy_long(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, connectTimeoutMs))
        // An origin that accepted the connection and then sends nothing would hold the transfer (and its waiters'
        // slots) forever: less than one byte a second for a minute ends it as a timeout.
        ferry_easy_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
        ferry_easy_long(easy, CURLOPT_LOW_SPEED_TIME, 60)
        // Refuse early when the origin announces a body over the limit; the write callback enforces it otherwise.
        ferry_easy_off(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxBytes))
        ferry_easy_ptr(easy, CURLOPT_WRITEDATA, me)
        ferry_easy_write_cb(easy) { data, size, count, user in
            let me = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
            return me.received(UnsafeRawBufferPointer(start: data, count: size * count))
        }
        ferry_easy_ptr(easy, CURLOPT_HEADERDATA, me)
        ferry_easy_header_cb(easy) { data, size, count, user in
            let me = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
            return me.headerLine(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
        }
        switch request.method {
        case "GET": ferry_easy_long(easy, CURLOPT_HTTPGET, 1)
        case "HEAD": ferry_easy_long(easy, CURLOPT_NOBODY, 1)
        default: ferry_easy_str(easy, CURLOPT_CUSTOMREQUEST, request.method)
        }
        if !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.method) {
            ferry_easy_long(easy, CURLOPT_POST, 1)
            ferry_easy_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
            if request.mayReplay {
                // libcurl copies the bytes (COPYPOSTFIELDS) and may send them again on a fresh connection.
                if request.body.isEmpty {
                    ferry_easy_str(easy, CURLOPT_COPYPOSTFIELDS, "")
                } else {
                    request.body.withUnsafeBytes { raw in
                        _ = ferry_easy_ptr(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress!))
                    }
                }
            } else {
                // Read through a callback that cannot rewind: when a reused connection dies after some of the body
                // went out, libcurl's retry needs a rewind, is refused, and the request fails instead of reaching
                // the origin twice (RFC 9110 §9.2.2).
                ferry_easy_ptr(easy, CURLOPT_READDATA, me)
                ferry_easy_read_cb(easy) { buffer, size, count, user in
                    Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue().readBody(into: buffer!, max: size * count)
                }
                ferry_easy_ptr(easy, CURLOPT_SEEKDATA, me)
                ferry_easy_seek_cb(easy) { _, _, _ in 2 }  // CURL_SEEKFUNC_CANTSEEK
            }
            if request.method != "POST" { ferry_easy_str(easy, CURLOPT_CUSTOMREQUEST, request.method) }
        }
        if !request.mayReplay && request.body.isEmpty {
            // Nothing to rewind, so libcurl would replay it freely: it goes on a connection of its own instead.
            ferry_easy_long(easy, CURLOPT_FRESH_CONNECT, 1)
        }
        var list: UnsafeMutablePointer<curl_slist>?
        // libcurl's own `Expect: 100-continue` costs a round trip on large bodies, and with a body it would send
        // `Content-Type: application/x-www-form-urlencoded` the client never asked for: the client's headers decide.
        var lines = ["Expect:"]
        if !request.headers.contains(where: { $0.0.lowercased() == "content-type" }) { lines.append("Content-Type:") }
        for (name, value) in request.headers { lines.append(value.isEmpty ? "\(name);" : "\(name): \(value)") }
        for line in lines { list = curl_slist_append(list, line) }
        headerList = list
        ferry_easy_slist(easy, CURLOPT_HTTPHEADER, list)
    }

    /// The request body, handed to libcurl in order, once (a replay would need a rewind, which is refused).
    private var bodySent = 0
    private func readBody(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        let n = min(max, request.body.count - bodySent)
        guard n > 0 else { return 0 }
        request.body.withUnsafeBytes { raw in
            UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress! + bodySent, byteCount: n)
        }
        bodySent += n
        return n
    }

    /// Turns progress reporting on (before the transfer is added).
    func reportProgress(_ callback: @escaping (Int, Int?) -> Void) {
        onProgress = callback
        ferry_easy_long(easy, CURLOPT_NOPROGRESS, 0)
        ferry_easy_ptr(easy, CURLOPT_XFERINFODATA, Unmanaged.passUnretained(self).toOpaque())
        ferry_easy_xferinfo_cb(easy) { user, total, now, _, _ in
            let me = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
            me.onProgress?(Int(now), total > 0 ? Int(total) : nil)
            return 0
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) -> Int {
        bodyStarted = true
        if spool.receivedBytes + bytes.count > request.maxBytes {
            exceeded = true
            return 0  // libcurl stops the transfer with CURLE_WRITE_ERROR
        }
        if spool.isWindowFull && pausable {
            // The one reader of a body nothing keeps is a window behind: libcurl keeps these bytes and stops
            // reading the origin until the reader has made room (TCP's own backpressure, as curl piped to a slow
            // reader), for at most `maxPauseMs` (`CurlMulti`). Readers are told of what is there, so that they
            // make it.
            spool.whenRoom { [weak self] in
                guard let self else { return }
                onResume(self)
            }
            onTouched(self)
            onPause(self)
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        if let failure = spool.append(bytes) {
            spoolFailure = failure
            return 0
        }
        onTouched(self)
        return bytes.count
    }

    /// Its owner cancelled: nothing more is announced.
    func silence() {
        events = nil
        onProgress = nil
    }

    /// Announces what the callbacks gathered: the head (once), then the spool's growth. Outside libcurl's calls.
    /// Returns true when the spool held a wake back (`BodySpool.announce`): ask again shortly.
    func deliverEvents() -> Bool {
        if headIsIn && !headDelivered, let events {
            headDelivered = true
            events.head(head())
        }
        return spool.announce(nowMs: WallClock.nowMs())
    }

    private func head() -> OriginHead {
        var head = OriginHead(status: status, headers: headers, requestTime: requestTime,
                              responseTime: responseTime == 0 ? WallClock.nowMs() / 1000 : responseTime, timing: timing())
        head.decoded = request.decodes && headers.contains { $0.0.lowercased() == "content-encoding" }
        return head
    }

    /// One header line; false stops the transfer (the header section is too large). A status line starts a new
    /// response (1xx interim responses come before the final one).
    private func headerLine(_ raw: UnsafeRawBufferPointer) -> Bool {
        headerBytes += raw.count
        if headerBytes > Transfer.maxHeaderBytes {
            headersExceeded = true
            return false  // libcurl stops the transfer with CURLE_WRITE_ERROR
        }
        // Bytes, not Characters: "\r\n" is one Character in Swift, so String suffix checks would not see "\n".
        var end = raw.count
        while end > 0 && (raw[end - 1] == 0x0A || raw[end - 1] == 0x0D) { end -= 1 }
        let line = String(decoding: UnsafeRawBufferPointer(rebasing: raw[..<end]), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
            headers.removeAll()
            responseTime = WallClock.nowMs() / 1000
            return true
        }
        if line.isEmpty {
            // The end of a head: a 1xx is interim (another head follows); anything else is the response.
            if status >= 200 && !headIsIn {
                headIsIn = true
                let fields = HTTPFields(headers)
                // A coding libcurl would fail on as the body starts — after the head has gone out, too late to ask
                // again — stops the transfer now, before the head: the fetch then asks again without decoding.
                if request.decodes, let coding = fields.combined("content-encoding"), !Transfer.decodable(coding) {
                    undecodable = true
                    return false
                }
                if spool.prefilled > 0 {
                    // A resumed download: a 206 must continue exactly where the kept bytes end; a 200 is the whole
                    // body again (the validator changed, or ranges are not served), so the kept bytes go.
                    if status == 206 {
                        guard fields.first("content-range").flatMap(contentRange)?.first == spool.prefilled,
                              !fields.contains("content-encoding") else {
                            return false  // libcurl stops the transfer; the request fails rather than mix bodies
                        }
                    } else {
                        spool.discardPrefill()
                    }
                }
                // The body's length is the announced one only when libcurl does not decode it.
                if !fields.contains("content-encoding") || !request.decodes,
                   let length = fields.first("content-length").flatMap({ Int($0) }) {
                    spool.expect(length)
                }
                onTouched(self)
            }
            return true
        }
        if line.first == " " || line.first == "\t" {
            // obs-fold (RFC 9112 §5.2): a continuation of the previous field's value.
            if !headers.isEmpty { headers[headers.count - 1].1 += " " + HTTPSyntax.trimmingOWS(line) }
            return true
        }
        guard let colon = line.firstIndex(of: ":") else { return true }
        headers.append((String(line[..<colon]), HTTPSyntax.trimmingOWS(String(line[line.index(after: colon)...]))))
        return true
    }

    /// Whether libcurl decodes every coding of a `Content-Encoding` value.
    static func decodable(_ value: String) -> Bool {
        value.split(separator: ",").allSatisfy { coding in
            switch HTTPSyntax.trimmingOWS(String(coding)).lowercased() {
            case "identity", "gzip", "x-gzip", "deflate": return true
            case "br": return supportsBrotli
            case "zstd": return supportsZstd
            default: return false
            }
        }
    }

    private static let supportsBrotli = ferry_curl_has_brotli() != 0
    private static let supportsZstd = ferry_curl_has_zstd() != 0

    /// Called by `CurlMulti` once, when libcurl is done with the transfer (or it was aborted): the head first if
    /// it was not announced yet (a response that came whole in one go), then the end.
    func finish(_ code: CURLcode, message: String?) {
        // The body is whole: a response that came in one go is then served from memory, at its head (and a
        // reader that writes its final frame at once has the exchange's times).
        if code == CURLE_OK {
            spool.timing = timing()
            spool.finish(.success(()))
        }
        if code == CURLE_OK && !headDelivered, let events {
            headDelivered = true
            events.head(head())  // may cancel this transfer: then there is no `done`
        }
        guard let events else { return }
        self.events = nil
        onProgress = nil
        if code == CURLE_OK { return events.done(.success(timing())) }
        if let spoolFailure { return events.done(.failure(spoolFailure)) }
        if undecodable {
            return events.done(.failure(.unavailable(curlCode: Int(CURLE_BAD_CONTENT_ENCODING.rawValue),
                                                     message: "the origin used a content coding ferryd does not decode")))
        }
        let text = message ?? String(cString: curl_easy_strerror(code))
        // libcurl refuses a single header field over 100 KiB with "Out of memory" before it reaches the callback.
        let tooLongField = code == CURLE_OUT_OF_MEMORY && !bodyStarted
        events.done(.failure(FetchFailure.from(code, text, exceeded: exceeded, maxBytes: request.maxBytes,
                                               headersExceeded: headersExceeded || tooLongField)))
    }

    private func timing() -> OriginTiming {
        func ms(_ info: CURLINFO) -> Double { Double(ferry_info_off(easy, info)) / 1000 }
        return OriginTiming(dnsMs: ms(CURLINFO_NAMELOOKUP_TIME_T), connectMs: ms(CURLINFO_CONNECT_TIME_T),
                      tlsMs: ms(CURLINFO_APPCONNECT_TIME_T), firstByteMs: ms(CURLINFO_STARTTRANSFER_TIME_T),
                      totalMs: ms(CURLINFO_TOTAL_TIME_T))
    }
}
