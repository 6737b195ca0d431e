#if canImport(Glibc)
import Glibc
#endif
import FerryLoop
import FerryProtocol

/// The listening socket: accepts each connection, checks that it may stay (`admission`), and hands it to the
/// connection table, or answers the refusal and closes it. Loop thread only.
///
/// ```swift
/// let listener = try Listener(loop: loop, config: config, table: table, log: log)   // bound and listening
/// listener.close()                                                                  // at the first signal
/// ```
final class Listener {
    private var config: ServerConfig
    private let table: ConnectionTable
    private let log: Logger
    private let socket: LoopPipeListener
    private let daemonUID = getuid()

    init(loop: EventLoop, config: ServerConfig, table: ConnectionTable, log: Logger) throws(ServerError) {
        self.config = config
        self.table = table
        self.log = log
        socket = LoopPipeListener(loop: loop)
        do throws(LoopError) {
            if let fd = config.inheritedListener { try socket.open(descriptor: fd) } else { try socket.bind(path: config.socketPath) }
            try socket.listen(backlog: 4096) { [unowned self] status in accept(status: status) }
        } catch {
            throw .bind(path: config.socketPath, message: error.description)
        }
        if config.inheritedListener == nil { try Listener.share(config, log: log) }
    }

    /// Bound 0600 (the umask around bind); widened now for whom it is shared with: 0660 and the group's, or 0666.
    /// A directory on the way that they cannot pass through is said in the log: they would get "no ferryd answers".
    static func share(_ config: ServerConfig, log: Logger) throws(ServerError) {
        let path = config.socketPath
        switch SocketSharing(config) {
        case .nobody: return
        case .group(let gid):
            guard chown(path, uid_t.max, gid_t(gid)) == 0, chmod(path, 0o660) == 0 else {
                throw .bind(path: path, message: "cannot give the socket to group \(config.socketGroup?.name ?? "?"): \(String(cString: strerror(errno)))")
            }
        case .everyone:
            guard chmod(path, 0o666) == 0 else { throw .bind(path: path, message: "cannot open the socket to other users: \(String(cString: strerror(errno)))") }
        }
        if let blocking = unreachableDirectory(path, group: config.socketGroup?.gid) {
            log.warn("other users cannot reach \(path): \(blocking) is not searchable by them; use --socket in a shared directory (e.g. /run/ferry)")
        }
    }

    /// The first directory above `path` that other users (or the group's members) cannot pass through.
    static func unreachableDirectory(_ path: String, group: UInt32?) -> String? {
        var dir = path
        while let slash = dir.lastIndex(of: "/"), slash != dir.startIndex {
            dir = String(dir[..<slash])
            var st = stat()
            guard stat(dir, &st) == 0 else { return dir }
            let others = st.st_mode & 0o001 != 0
            let groupOK = group.map { st.st_gid == gid_t($0) && st.st_mode & 0o010 != 0 } ?? false
            if !others && !groupOK { return dir }
        }
        return nil
    }

    func close() { socket.close() }

    /// A reload's new admission rules, for connections from now on.
    func update(maxConnections: Int, allowOtherUsers: Bool) {
        config.maxConnections = maxConnections
        config.allowOtherUsers = allowOtherUsers
    }

    private func accept(status: Int32) {
        guard status == 0, let pipe = socket.accept() else { return }
        let connection = table.open(pipe)
        // A shared socket's file mode decides who reaches it; every uid that does is served.
        let refusal = Listener.admission(peerUID: pipe.peerUID(), daemonUID: daemonUID, allowOtherUsers: config.sharesSocket,
                                         open: table.count, maxConnections: config.maxConnections)
        if let refusal {
            table.stats.connectionsRejected += 1
            table.stats.countConnectionError(refusal.code)
            log.info("conn=\(connection.id) refused: \(refusal.message)")
            connection.writeError(id: 0, error: refusal)
            connection.flush()
            connection.closeAfterFlush()
            return
        }
        log.debug("conn=\(connection.id) open")
        connection.startReading()
    }

    /// Why a new connection may not stay, or nil: another uid (unless allowed), unreadable credentials, or more
    /// connections open (this one included) than the limit.
    static func admission(peerUID: UInt32?, daemonUID: UInt32, allowOtherUsers: Bool, open: Int, maxConnections: Int) -> WireError? {
        if !allowOtherUsers {
            guard let uid = peerUID else { return WireError(.permissionDenied, "cannot read the peer's credentials") }
            if uid != daemonUID {
                return WireError(.permissionDenied, "peer uid \(uid) is not the daemon's uid \(daemonUID); start ferryd with --allow-other-users to allow it")
            }
        }
        if open > maxConnections {
            return WireError(.resourceExhausted, "ferryd serves at most \(maxConnections) connections")
        }
        return nil
    }
}
