extension String {
    /// At most `limit` bytes of the string (cut at a Unicode scalar boundary, "…" appended), for echoing client
    /// input in error messages without letting a hostile input make the reply large. The work is bounded by
    /// `limit`, not by the string: walking Characters would cluster all of a 1 MB run of combining marks first.
    public func truncated(toBytes limit: Int) -> String {
        guard utf8.count > limit else { return self }
        var scalars = String.UnicodeScalarView()
        var used = 0
        for scalar in unicodeScalars {
            let n = UTF8.width(scalar)
            if used + n > limit { break }
            scalars.append(scalar)
            used += n
        }
        return String(scalars) + "…"
    }

    /// The form used in error messages: 128 bytes at most.
    public var truncatedForMessages: String { truncated(toBytes: 128) }
}
