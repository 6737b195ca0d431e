/// What the second tier needs of Redis, whether one server (`RedisClient`) or a cluster (`RedisCluster`): commands
/// with bounded replies, channels to listen on, and word of the link. Loop thread only.
///
/// ```swift
/// let redis: RedisConnection = seeds.count > 1 ? RedisCluster(loop: loop, seeds: seeds) : RedisClient(loop: loop, endpoint: seeds[0])
/// redis.start()
/// redis.send([Array("GET".utf8), key]) { reply in … }
/// ```
public protocol RedisConnection: AnyObject, CustomStringConvertible {
    var isConnected: Bool { get }
    var counters: RedisCounters { get }
    /// Told of each change of the link, as a line for the log.
    var onChange: (String) -> Void { get set }
    /// A connection was lost: news awaited on it (a subscription's message) will not come.
    var onLost: () -> Void { get set }
    func start()
    func close()
    /// Sends a command (its arguments as bytes); `done` runs once, on the loop thread, within the timeout.
    func send(_ args: [[UInt8]], _ done: @escaping (RedisReply) -> Void)
    /// Listens on `channel`, on a connection of its own, again after each reconnection.
    func subscribe(_ channel: String, _ onMessage: @escaping ([UInt8]) -> Void)
}
