import FerryLoop
import FerryBytes
import FerryProtocol

/// `ping`: echoes the request body; with `delay_ms` it stays in flight (on a loop timer) until then, with `events`
/// it sends that many `tick` events first. The simplest request to cancel, time out and drain at shutdown.
final class PingOperation: OperationHandler {
    let descriptor = OperationCatalog.ping
    static let maxDelayMs: Int64 = 60_000
    static let maxEvents: Int64 = 1000
    private static let pong: JSONObject = ["pong": true]
    private let loop: EventLoop

    init(loop: EventLoop) { self.loop = loop }

    func start(_ request: RequestContext) {
        var delay: Int64 = 0
        var events: Int64 = 0
        if !request.args.isEmpty {
            guard let d = PingOperation.integer(request, "delay_ms", max: PingOperation.maxDelayMs),
                  let e = PingOperation.integer(request, "events", max: PingOperation.maxEvents) else { return }
            delay = d
            events = e
        }
        for n in 0..<events { request.event(.tick, data: ["n": .int(n)]) }
        guard delay > 0 else { return request.succeed(PingOperation.pong, body: request.body) }
        let timer = LoopTimer(loop: loop) { [weak request] timer in
            timer.close()
            request?.succeed(PingOperation.pong, body: request?.body ?? [])
        }
        // Whatever ends the request first (cancel, deadline, closed connection, shutdown), the timer goes with it.
        request.onCancel = { timer.close() }
        timer.start(afterMs: UInt64(delay))
    }

    /// Reads an optional integer argument in 0...max, failing the request (and returning nil) when it is not one.
    private static func integer(_ request: RequestContext, _ name: String, max: Int64) -> Int64? {
        guard let v = request.args[name] else { return 0 }
        guard case .int(let n) = v, n >= 0, n <= max else {
            request.fail(.invalidArgument, "\"\(name)\" must be an integer from 0 to \(max)")
            return nil
        }
        return n
    }
}

extension PingOperation: HotOperation {
    /// A ping without arguments: the pong at once, with the body echoed.
    func answerHot(_ request: HotRequest, _ reply: HotReply) -> Bool {
        guard !request.envelope.hasArgs, request.body.count <= reply.maxBody else { return false }
        reply.succeed(body: request.body) { $0.ascii("{\"pong\":true}") }
        return true
    }
}
