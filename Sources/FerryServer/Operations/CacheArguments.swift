import FerryCache
import FerryProtocol
import FerryStore

/// What every `cache.*` operation is built with: the store.
class CacheOperation {
    let store: CacheStore

    init(store: CacheStore) { self.store = store }
}

/// Reading and checking `cache.*` arguments; each failure answers `invalid_argument` with a precise message.
enum CacheArguments {
    struct Invalid: Error {
        let message: String
    }

    static func key(_ args: JSONObject) throws(Invalid) -> CacheKey {
        guard let k = args["key"] else { throw Invalid(message: "\"key\" is required") }
        guard case .string(let key) = k else { throw Invalid(message: "\"key\" must be a string") }
        let ns = try namespace(args)
        do {
            return try CacheKey(namespace: ns, key: key)
        } catch {
            throw Invalid(message: error.message)
        }
    }

    static func namespace(_ args: JSONObject) throws(Invalid) -> String {
        guard let v = args["namespace"], v != .null else { return CacheKey.defaultNamespace }
        guard case .string(let ns) = v else { throw Invalid(message: "\"namespace\" must be a string") }
        if let problem = CacheKey.namespaceProblem(ns) { throw Invalid(message: problem) }
        return ns
    }

    /// `ttl_ms`: absent → `.none`. Where it is optional, `null` is the same as absent; where it is `required`
    /// (touch), `null` means "never expire" and comes back as `.some(nil)`.
    static func ttl(_ args: JSONObject, required: Bool = false) throws(Invalid) -> Int64?? {
        guard let v = args["ttl_ms"] else {
            if required { throw Invalid(message: "\"ttl_ms\" is required (an integer, or null for no expiry)") }
            return .none
        }
        if v == .null { return required ? .some(nil) : .none }
        guard case .int(let ms) = v, ms >= 1, ms <= CacheEntry.maxTTLms else {
            throw Invalid(message: "\"ttl_ms\" must be an integer from 1 to \(CacheEntry.maxTTLms)")
        }
        return .some(ms)
    }

    static func bool(_ args: JSONObject, _ name: String) throws(Invalid) -> Bool {
        guard let v = args[name], v != .null else { return false }
        guard case .bool(let b) = v else { throw Invalid(message: "\"\(name)\" must be a boolean") }
        return b
    }

    static func string(_ args: JSONObject, _ name: String) throws(Invalid) -> String? {
        guard let v = args[name], v != .null else { return nil }
        guard case .string(let s) = v else { throw Invalid(message: "\"\(name)\" must be a string") }
        return s
    }

    static func limit(_ args: JSONObject) throws(Invalid) -> Int {
        guard let v = args["limit"], v != .null else { return 100 }
        guard case .int(let n) = v, n >= 1, n <= 1000 else { throw Invalid(message: "\"limit\" must be an integer from 1 to 1000") }
        return Int(n)
    }
}

extension RequestContext {
    /// Runs `body`, answering `invalid_argument` when it throws.
    func withArguments(_ body: () throws(CacheArguments.Invalid) -> Void) {
        do { try body() } catch { fail(.invalidArgument, error.message) }
    }

    /// Answers a store result: `success` builds the reply from the value, a failure gets its protocol code.
    func answer<T>(_ result: Result<T, StoreError>, _ success: (T) -> Void) {
        switch result {
        case .success(let value): success(value)
        case .failure(let error): fail(store: error)
        }
    }

    /// The `not_found` answer for a key with no live entry.
    func failNotFound(_ key: CacheKey) { fail(WireError.notFound(key)) }

    /// Answers a storage failure with its protocol code.
    func fail(store error: StoreError) { fail(WireError(store: error)) }
}

extension WireError {
    /// A storage failure as the protocol answers it.
    init(store error: StoreError) {
        switch error {
        case .valueTooLarge, .diskFull, .tooManyFiles, .busy, .overDiskBudget: self.init(.resourceExhausted, error.description)
        case .readOnly: self.init(.unavailable, error.description)
        case .io: self.init(.internal, error.description)
        }
    }

    /// The answer for a key with no live entry (a damaged value found before any of it was sent is one too).
    static func notFound(_ key: CacheKey) -> WireError {
        WireError(.notFound, "no entry \"\(key.key.truncatedForMessages)\" in namespace \"\(key.namespace)\"")
    }
}
