/// Who hears that a set made on the fast path is on disk (`CacheStore.setSettling`): FerryServer's connection, by
/// the request's id. One call per set at the end of the loop iteration that journaled it, on the loop thread.
///
/// ```swift
/// final class Replies: SetAcknowledging {
///     func setSettled(id: UInt64, failure: StoreError?) { print(id, failure == nil ? "stored" : "failed") }
/// }
/// ```
public protocol SetAcknowledging: AnyObject {
    /// `failure` nil: the set is acknowledged (journaled under the fsync policy); else why it was not kept.
    func setSettled(id: UInt64, failure: StoreError?)
}
