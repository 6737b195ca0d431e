/// The canonical spelling of a hot request, as every Ferry client writes it (FerryClient's `RequestEnvelope`, the
/// Python client's compact `json.dumps`, ferry-bench): no whitespace, `id`, `op`, then `args` holding `key` and
/// perhaps `namespace`, in that order:
///
/// ```
/// {"id":7,"op":"ping"}
/// {"id":7,"op":"cache.get","args":{"key":"user:1"}}
/// {"id":7,"op":"cache.get","args":{"key":"user:1","namespace":"app"}}
/// ```
///
/// Read by matching the punctuation and member names as whole words (`word`) and only the values as values, with the
/// general scan's own `integer()` and `string()`: ~500 instructions for a cache.get where the general scan, which
/// looks for whitespace and any member order between every token, took ~1,000 (callgrind, issue 12). Any other
/// spelling — or anything this does not accept — is nil here and goes to the general scan, which accepts every
/// canonical envelope too and reads it the same (`HotEnvelopeTests` compares both on every envelope it has).
extension HotEnvelope.Scanner {
    mutating func canonical() -> HotEnvelope? {
        var e = HotEnvelope()
        guard word("{\"id\":"), let id = integer(), id >= 1, id <= Int64(RequestEnvelope.maxID) else { return nil }
        e.id = UInt64(id)
        guard word(",\"op\":"), let op = string() else { return nil }
        e.op = op
        if word(",\"args\":{\"key\":") {
            guard let key = string() else { return nil }
            (e.key, e.hasArgs) = (key, true)
            if word(",\"namespace\":") {
                guard let namespace = string() else { return nil }
                e.namespace = namespace
            }
            guard word("}") else { return nil }
        }
        guard word("}"), i == b.count else { return nil }
        return e
    }
}
