import FerryBytes

/// Why a byte stream stopped being a valid sequence of frames. Any of these is a `protocol_error`: the peer gets one
/// error frame and the connection closes.
public enum FrameError: Error, Sendable, Equatable, CustomStringConvertible {
    case emptyEnvelope
    case envelopeTooLarge(length: Int, limit: Int)
    case frameTooLarge(length: Int, limit: Int)

    public var description: String {
        switch self {
        case .emptyEnvelope: return "frame with an empty JSON envelope (json_len 0)"
        case .envelopeTooLarge(let n, let limit): return "JSON envelope of \(n) bytes exceeds the limit of \(limit)"
        case .frameTooLarge(let n, let limit): return "frame of \(n) bytes exceeds the limit of \(limit)"
        }
    }
}

/// The two lengths at the start of every frame.
public struct FrameHeader: Sendable, Equatable {
    public var jsonLength: Int
    public var bodyLength: Int
    public var frameLength: Int { ProtocolLimits.headerBytes + jsonLength + bodyLength }

    /// Reads and checks a header from the first 8 bytes; `nil` when fewer are present. Checking here, before
    /// anything else is read, is what keeps a hostile length from costing memory.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxFrameBytes: Int, maxJSONBytes: Int) throws(FrameError) -> FrameHeader? {
        guard bytes.count >= ProtocolLimits.headerBytes else { return nil }
        let json = Int(readU32(bytes, 0))
        let body = Int(readU32(bytes, 4))
        if json == 0 { throw .emptyEnvelope }
        if json > maxJSONBytes { throw .envelopeTooLarge(length: json, limit: maxJSONBytes) }
        let total = ProtocolLimits.headerBytes + json + body
        if total > maxFrameBytes { throw .frameTooLarge(length: total, limit: maxFrameBytes) }
        return FrameHeader(jsonLength: json, bodyLength: body)
    }

    static func readU32(_ b: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: BigEndian.load(b, at: at, bytes: 4))
    }
}

/// One decoded frame, pointing into the decoder's buffer: valid only inside the closure it is passed to.
public struct FrameView {
    public var json: UnsafeRawBufferPointer
    public var body: UnsafeRawBufferPointer
}

/// A frame whose envelope is in and whose body is still arriving (`FrameDecoder.openFrameView`): valid only inside
/// the closure it is passed to.
public struct OpenFrameView {
    public var json: UnsafeRawBufferPointer
    /// The body's first bytes, those already buffered.
    public var bodyRead: UnsafeRawBufferPointer
    public var bodyLength: Int
    /// Body bytes still to come.
    public var bodyLeft: Int { bodyLength - bodyRead.count }
}

/// One decoded frame that owns its bytes.
public struct Frame: Sendable, Equatable {
    public var json: [UInt8]
    public var body: [UInt8]
    public init(json: [UInt8], body: [UInt8] = []) {
        self.json = json
        self.body = body
    }
}

/// An incremental frame decoder: feed it bytes as they arrive, in pieces of any size, and take whole frames out one
/// step at a time. Limits can change between frames (the handshake limit is lifted after `hello`).
///
/// A class: its state is the buffer, shared anyway, and a daemon's connection reaches its decoder through a `let`
/// with no reference counting (as a struct in a `var`, every frame retained and released its buffer, callgrind).
///
/// ```swift
/// let decoder = FrameDecoder(maxFrameBytes: 65536, maxJSONBytes: 65536)
/// decoder.append(bytesFromSocket)
/// while let frame = try decoder.next() { handle(frame) }
/// ```
public final class FrameDecoder {
    public var maxFrameBytes: Int
    public var maxJSONBytes: Int
    public let buffer: ByteBuffer

    public init(maxFrameBytes: Int, maxJSONBytes: Int, buffer: ByteBuffer = ByteBuffer()) {
        self.maxFrameBytes = maxFrameBytes
        self.maxJSONBytes = maxJSONBytes
        self.buffer = buffer
    }

    /// Bytes received but not yet part of a returned frame.
    public var pendingBytes: Int { buffer.readableCount }

    /// Frames handed out so far: the next frame's number (a frame read ahead by `peekView` is known by it).
    public private(set) var delivered = 0

    public func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(bytes) }
    public func append(_ bytes: [UInt8]) { buffer.append(bytes) }

    /// Calls `body` with the next whole frame, without copying, and consumes it; `nil` when no whole frame is
    /// buffered yet. Throws as soon as a header breaks the limits, even though the frame's bytes have not arrived.
    public func nextView<R>(_ body: (FrameView) throws -> R) throws -> R? {
        let bytes = buffer.readable
        guard let header = try FrameHeader.parse(bytes, maxFrameBytes: maxFrameBytes, maxJSONBytes: maxJSONBytes) else {
            return nil
        }
        guard bytes.count >= header.frameLength else { return nil }
        let jsonStart = ProtocolLimits.headerBytes
        let bodyStart = jsonStart + header.jsonLength
        let view = FrameView(
            json: UnsafeRawBufferPointer(rebasing: bytes[jsonStart..<bodyStart]),
            body: UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<header.frameLength]))
        let result = try body(view)
        buffer.consume(header.frameLength)
        delivered += 1
        return result
    }

    /// Calls `body` with the next whole frame without consuming it (it is handed out again by `nextView`); false
    /// when none is whole, or when its header breaks the limits (`nextView` throws for that). Not generic, as
    /// `nextFrame`: the daemon peeks at most frames it reads (`ReadBatch`).
    /// `from`: where in the buffered bytes the frame starts (0: the next one; the next one's length: the one after
    /// it, for a reader that looks ahead while it handles the next one, and knows its length).
    @discardableResult
    public func peekFrame(from offset: Int = 0, _ body: (FrameView) -> Void) -> Bool {
        peekView(from: offset, body) != nil
    }

    /// `peekFrame` with a result: nil when no whole frame is there.
    public func peekView<R>(from offset: Int = 0, _ body: (FrameView) -> R) -> R? {
        let all = buffer.readable
        guard offset >= 0 && offset < all.count else { return nil }
        let bytes = offset == 0 ? all : UnsafeRawBufferPointer(rebasing: all[offset...])
        guard let header = try? FrameHeader.parse(bytes, maxFrameBytes: maxFrameBytes, maxJSONBytes: maxJSONBytes),
              bytes.count >= header.frameLength else { return nil }
        let jsonStart = ProtocolLimits.headerBytes
        let bodyStart = jsonStart + header.jsonLength
        return body(FrameView(json: UnsafeRawBufferPointer(rebasing: bytes[jsonStart..<bodyStart]),
                              body: UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<header.frameLength])))
    }

    /// `nextView` for a handler that returns nothing: true when a frame was handled. Not generic: a daemon calls it
    /// for every frame, and the generic form, called from another module, handled its result through value
    /// witnesses (callgrind).
    public func nextFrame(_ body: (FrameView) throws -> Void) throws -> Bool {
        try nextView(body) != nil
    }

    /// The next whole frame as an owned copy; `nil` when none is buffered yet.
    public func next() throws(FrameError) -> Frame? {
        do {
            return try nextView { Frame(json: Array($0.json), body: Array($0.body)) }
        } catch let e as FrameError {
            throw e
        } catch {
            fatalError("unreachable: the closure does not throw")
        }
    }

    /// Offers the frame at the front when its header and envelope are in but at least `minimumLeft` bytes of its
    /// body are still to come, so that a reader can receive the rest straight into where the body goes instead of
    /// through this buffer (a copy of every byte, and the partial frame moved to the front as the buffer fills:
    /// 40 % of FerryClient's time on a 10 MB body, perf). When `take` returns non-nil the decoder drops the frame's
    /// buffered bytes, and the caller owes it exactly `view.bodyLeft` bytes of the stream before the next frame;
    /// when it returns nil nothing changes. Nil without calling `take` when a whole frame is buffered (take it with
    /// `nextView` first) or too little of the body is left.
    ///
    /// ```swift
    /// let opened = try decoder.openFrameView(minimumLeft: 65536) { view in
    ///     destination.append(view.bodyRead)   // then receive view.bodyLeft more bytes into destination
    ///     return view.bodyLeft
    /// }
    /// ```
    public func openFrameView<R>(minimumLeft: Int, _ take: (OpenFrameView) throws -> R?) throws -> R? {
        let bytes = buffer.readable
        guard let header = try FrameHeader.parse(bytes, maxFrameBytes: maxFrameBytes, maxJSONBytes: maxJSONBytes) else {
            return nil
        }
        let bodyStart = ProtocolLimits.headerBytes + header.jsonLength
        guard bytes.count >= bodyStart, header.frameLength - bytes.count >= max(1, minimumLeft) else { return nil }
        let view = OpenFrameView(
            json: UnsafeRawBufferPointer(rebasing: bytes[ProtocolLimits.headerBytes..<bodyStart]),
            bodyRead: UnsafeRawBufferPointer(rebasing: bytes[bodyStart...]),
            bodyLength: header.bodyLength)
        guard let taken = try take(view) else { return nil }
        buffer.consume(bytes.count)
        delivered += 1
        return taken
    }

    /// The frame still being received, if any: at EOF this means the peer stopped mid-frame.
    public var hasPartialFrame: Bool { buffer.readableCount > 0 }
}

/// Writes frames: header, envelope and body, appended to a byte array.
public enum FrameEncoder {
    /// Appends a frame whose JSON is written by `writeJSON`, patching the header's lengths afterwards so the
    /// envelope is never built twice.
    public static func append(to out: inout [UInt8], body: UnsafeRawBufferPointer? = nil, writeJSON: (inout [UInt8]) -> Void) {
        appendHead(to: &out, bodyLength: body?.count ?? 0, writeJSON: writeJSON)
        if let body, body.count > 0 { out.append(contentsOf: body) }
    }

    /// The frame's header and JSON only, for a body of `bodyLength` bytes the caller writes next (from where it
    /// is, without copying it here).
    public static func appendHead(to out: inout [UInt8], bodyLength: Int, writeJSON: (inout [UInt8]) -> Void) {
        let headerAt = out.count
        // Eight bytes patched below, appended as one word (a `repeatElement` took the generic path: 146
        // instructions of a 3,600-instruction ping, callgrind).
        withUnsafeBytes(of: UInt64(0)) { out.append(contentsOf: $0) }
        writeJSON(&out)
        let jsonLength = out.count - headerAt - ProtocolLimits.headerBytes
        let header = header(jsonLength: jsonLength, bodyLength: bodyLength)
        out.withUnsafeMutableBytes { $0.storeBytes(of: header, toByteOffset: headerAt, as: UInt64.self) }
    }

    /// A frame's header: both lengths in one big-endian word, stored with one write.
    @inlinable
    public static func header(jsonLength: Int, bodyLength: Int) -> UInt64 {
        (UInt64(UInt32(jsonLength)) << 32 | UInt64(UInt32(bodyLength))).bigEndian
    }

    /// The bytes of one frame.
    public static func encode(json: JSONValue, body: [UInt8] = []) -> [UInt8] {
        var out: [UInt8] = []
        body.withUnsafeBytes { b in
            append(to: &out, body: b) { JSONWriter.write(json, to: &$0) }
        }
        return out
    }
}
