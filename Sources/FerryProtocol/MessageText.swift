extension String {
    /// At most `limit` bytes of the string (cut at a character boundary, "…" appended), for echoing client input in
    /// error messages without letting a hostile input make the reply large.
    public func truncated(toBytes limit: Int) -> String {
        guard utf8.count > limit else { return self }
        var out = ""
        var used = 0
        for ch in self {
            let n = ch.utf8.count
            if used + n > limit { break }
            out.append(ch)
            used += n
        }
        return out + "…"
    }

    /// The form used in error messages: 128 bytes at most.
    public var truncatedForMessages: String { truncated(toBytes: 128) }
}
