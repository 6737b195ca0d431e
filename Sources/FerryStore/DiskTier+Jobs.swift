#if canImport(Glibc)
import Glibc
#endif
import FerryCache

/// The tier's operations that are one worker job each, answered once the job's transaction committed: adopting a
/// file, deleting, retiming, listing and clearing. (Sets are `DiskTier.write`'s: they may go through the journal.)
///
/// ```swift
/// disk.remove(key, now: now) { result in … }   // .success(true): the key existed
/// ```
extension DiskTier {
    func adopt(_ key: CacheKey, _ file: AdoptedFile, _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        submit(.adopt(key, file), "adopt", done) { if case .stored(let stored) = $0 { stored } else { nil } }
    }

    func remove(_ key: CacheKey, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        submit(.delete(key, now: now), "delete", done) { if case .deleted(let existed) = $0 { existed } else { nil } }
    }

    func retime(_ key: CacheKey, expiresAt: Int64?, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        submit(.touch(key, expiresAt: expiresAt, now: now), "touch", done) { if case .touched(let live) = $0 { live } else { nil } }
    }

    func list(namespace: String, prefix: String, cursor: String?, limit: Int, now: Int64,
              _ done: @escaping (Result<(keys: [ListedKey], more: Bool), StoreError>) -> Void) {
        submit(.list(namespace: namespace, prefix: prefix, cursor: cursor, limit: limit, now: now), "list", done) {
            if case .listed(let keys, let more) = $0 { (keys, more) } else { nil }
        }
    }

    func clear(namespace: String, now: Int64, _ done: @escaping (Result<Int, StoreError>) -> Void) {
        submit(.clear(namespace: namespace, now: now), "clear", done) { if case .cleared(let n) = $0 { n } else { nil } }
    }

    /// Submits `job` and answers with what `answer` reads from its result: a failure as it came, and a result of
    /// another kind (a bug) as an `io` error naming the operation.
    private func submit<T>(_ job: DiskJob, _ operation: String, _ done: @escaping (Result<T, StoreError>) -> Void,
                           answer: @escaping (DiskResult) -> T?) {
        submit(job) { result in
            if case .failed(let e) = result { return done(.failure(e)) }
            guard let value = answer(result) else { return done(.failure(.io("unexpected disk result for \(operation)"))) }
            done(.success(value))
        }
    }
}
