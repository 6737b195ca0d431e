// The Cache-Control field grammar (RFC 9111 §5.2):
//   Cache-Control   = #cache-directive
//   cache-directive = token [ "=" ( token / quoted-string ) ]
// parsed leniently enough to recover from garbage without ever reading a directive out of a quoted string.

extension CacheControl {
    /// One directive as written: the name lower-cased, the argument with quotes and escapes resolved.
    ///
    /// ```swift
    /// CacheControl("Private=\"Set-Cookie\"").directives[0]
    /// // Directive(name: "private", argument: "Set-Cookie", isWellFormed: true)
    /// ```
    public struct Directive: Sendable, Equatable {
        /// Lower-cased directive name (names are case-insensitive, RFC 9111 §5.2): `"Max-Age"` → `"max-age"`.
        public let name: String
        /// The argument without quotes, or nil when the directive has none: `max-age="60"` → `"60"`.
        public let argument: String?
        /// False when the member did not follow the grammar (e.g. `max-age =5`, `max-age= 5`, an
        /// unterminated quoted string, trailing garbage); such directives are kept so that their presence is
        /// known, but their argument is never trusted. `CacheControl("max-age =5").directives[0].isWellFormed == false`
        public let isWellFormed: Bool

        /// A directive, as the parser builds it.
        ///
        /// ```swift
        /// let d = CacheControl.Directive(name: "max-age", argument: "60")
        /// ```
        public init(name: String, argument: String? = nil, isWellFormed: Bool = true) {
            self.name = name
            self.argument = argument
            self.isWellFormed = isWellFormed
        }
    }

    /// Parses one field line into directives, in order.
    static func parseDirectives(_ line: String) -> [Directive] {
        let b = Array(line.utf8)
        var out: [Directive] = []
        var i = 0

        func skipOWS() { while i < b.count, ListSyntax.isOWS(b[i]) { i += 1 } }
        // Skips to just after the next comma that is not inside a quoted string.
        func skipMember() {
            var inQuotes = false
            while i < b.count {
                let c = b[i]
                if inQuotes {
                    if c == ListSyntax.backslash { i += 1 } else if c == ListSyntax.quote { inQuotes = false }
                } else if c == ListSyntax.quote {
                    inQuotes = true
                } else if c == ListSyntax.comma {
                    i += 1
                    return
                }
                i += 1
            }
        }

        while i < b.count {
            skipOWS()
            if i < b.count, b[i] == ListSyntax.comma {  // empty list member
                i += 1
                continue
            }
            if i >= b.count { break }
            let nameStart = i
            while i < b.count, ListSyntax.isTChar(b[i]) { i += 1 }
            if i == nameStart {  // not a token at all: ignore the member
                skipMember()
                continue
            }
            let name = ListSyntax.lower(String(decoding: b[nameStart..<i], as: UTF8.self))
            var argument: String?
            var wellFormed = true
            if i < b.count, b[i] == ListSyntax.equals {
                i += 1
                if i < b.count, b[i] == ListSyntax.quote {
                    var value: [UInt8] = []
                    var closed = false
                    i += 1
                    while i < b.count {
                        let c = b[i]
                        if c == ListSyntax.backslash, i + 1 < b.count {
                            value.append(b[i + 1])
                            i += 2
                        } else if c == ListSyntax.quote {
                            closed = true
                            i += 1
                            break
                        } else {
                            value.append(c)
                            i += 1
                        }
                    }
                    argument = String(decoding: value, as: UTF8.self)
                    wellFormed = closed
                } else {
                    let valueStart = i
                    while i < b.count, ListSyntax.isTChar(b[i]) { i += 1 }
                    argument = String(decoding: b[valueStart..<i], as: UTF8.self)
                    if i == valueStart { wellFormed = false }  // "max-age=" or "max-age= 5"
                }
            }
            skipOWS()
            if i < b.count, b[i] != ListSyntax.comma {  // trailing garbage, e.g. "max-age =5", "a b"
                wellFormed = false
                skipMember()
            } else if i < b.count {
                i += 1
            }
            out.append(Directive(name: name, argument: argument, isWellFormed: wellFormed))
        }
        return out
    }

    /// The field names of a qualified `no-cache="..."` / `private="..."` argument, lower-cased; an empty
    /// result means the directive is treated as unqualified.
    static func fieldNames(_ argument: String?) -> [String] {
        guard let argument else { return [] }
        return ListSyntax.splitList(argument).compactMap { member in
            ListSyntax.isToken(String(member)) ? ListSyntax.lower(member) : nil
        }
    }
}
