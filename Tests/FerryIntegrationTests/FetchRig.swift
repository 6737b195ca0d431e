import FerryClient

/// What most fetch tests start with: the project's origin, a `ferryd` (with `daemonArgs`) and a client connected to
/// it; `stop()` closes the client and stops both processes by PID.
///
/// ```swift
/// let rig = try await FetchRig()
/// defer { rig.stop() }
/// let r = try await rig.client.fetch(FetchRequest(rig.origin.url("/r?size=10")))
/// ```
final class FetchRig {
    let origin: OriginServer
    let daemon: Daemon
    let client: FerryClient

    init(daemonArgs: [String] = []) async throws {
        let origin = try OriginServer()
        let daemon: Daemon
        do { daemon = try Daemon(daemonArgs) } catch { origin.stop(); throw error }
        do { client = try await FerryClient.connect(path: daemon.socket) } catch { daemon.stop(); origin.stop(); throw error }
        self.origin = origin
        self.daemon = daemon
    }

    func stop() {
        client.close()
        daemon.stop()
        origin.stop()
    }
}
