/// An ordered list of HTTP header fields, as received: duplicates and order are kept, names compare
/// case-insensitively (RFC 9110 §5.1) but are stored exactly as given.
///
/// ```swift
/// let fields: HTTPFields = ["Cache-Control": "max-age=60", "cache-control": "public", "ETag": "\"v1\""]
/// fields.values("CACHE-CONTROL")    // ["max-age=60", "public"]
/// fields.combined("cache-control")  // "max-age=60, public"
/// fields.first("etag")              // "\"v1\""
/// ```
public struct HTTPFields: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// One field line: `for (name, value) in fields { ... }`.
    public typealias Element = (name: String, value: String)

    /// Every field line in order: `(["A": "1"] as HTTPFields).pairs[0].name == "A"`.
    public private(set) var pairs: [(name: String, value: String)]

    /// An empty list.
    ///
    /// ```swift
    /// HTTPFields().isEmpty  // true
    /// ```
    public init() { pairs = [] }

    /// The fields in the given order.
    ///
    /// ```swift
    /// let f = HTTPFields([("Vary", "Accept"), ("Vary", "Origin")])
    /// f.values("vary")  // ["Accept", "Origin"]
    /// ```
    public init(_ pairs: [(String, String)]) {
        self.pairs = pairs.map { (name: $0.0, value: $0.1) }
    }

    /// A literal list; repeated names are kept (unlike a `Dictionary` literal).
    ///
    /// ```swift
    /// let f: HTTPFields = ["Set-Cookie": "a=1", "Set-Cookie": "b=2"]
    /// f.count  // 2
    /// ```
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Iterates the lines in order: `for field in fields { print(field.name, field.value) }`.
    public func makeIterator() -> IndexingIterator<[Element]> { pairs.makeIterator() }

    /// The number of field lines: `(["A": "1", "a": "2"] as HTTPFields).count == 2`.
    public var count: Int { pairs.count }
    /// Whether there is no field line at all: `HTTPFields().isEmpty == true`.
    public var isEmpty: Bool { pairs.isEmpty }

    /// The values of every line named `name` (any case), in order.
    ///
    /// ```swift
    /// (["a": "1", "A": "2"] as HTTPFields).values("a")  // ["1", "2"]
    /// ```
    public func values(_ name: String) -> [String] {
        pairs.compactMap { ListSyntax.equalsIgnoringCase($0.name, name) ? $0.value : nil }
    }

    /// The value of the first line named `name`, or nil.
    ///
    /// ```swift
    /// (["Date": "x", "date": "y"] as HTTPFields).first("DATE")  // "x"
    /// ```
    public func first(_ name: String) -> String? {
        pairs.first { ListSyntax.equalsIgnoringCase($0.name, name) }?.value
    }

    /// Whether any line is named `name`.
    ///
    /// ```swift
    /// (["ETag": "\"1\""] as HTTPFields).contains("etag")  // true
    /// ```
    public func contains(_ name: String) -> Bool {
        pairs.contains { ListSyntax.equalsIgnoringCase($0.name, name) }
    }

    /// All lines named `name` joined with ", " (RFC 9110 §5.3), or nil when there is none.
    ///
    /// ```swift
    /// (["Vary": "Accept", "Vary": "Origin"] as HTTPFields).combined("vary")  // "Accept, Origin"
    /// ```
    public func combined(_ name: String) -> String? {
        let v = values(name)
        return v.isEmpty ? nil : v.joined(separator: ", ")
    }

    /// The list members of every line named `name`, split on commas outside quoted strings and trimmed.
    ///
    /// ```swift
    /// (["Connection": "close, X-A", "connection": "x-b"] as HTTPFields).listMembers("connection")
    /// // ["close", "X-A", "x-b"]
    /// ```
    public func listMembers(_ name: String) -> [String] {
        values(name).flatMap { ListSyntax.splitList($0).map(String.init) }
    }

    /// A copy without any line named `name`.
    ///
    /// ```swift
    /// (["Age": "3", "ETag": "\"x\""] as HTTPFields).removingAll("age").count  // 1
    /// ```
    public func removingAll(_ name: String) -> HTTPFields {
        var copy = self
        copy.removeAll(name)
        return copy
    }

    /// A copy without any line whose name is in `names` (compared case-insensitively).
    ///
    /// ```swift
    /// (["A": "1", "B": "2"] as HTTPFields).removingAll(names: ["a"]).first("b")  // "2"
    /// ```
    public func removingAll(names: Set<String>) -> HTTPFields {
        if names.isEmpty { return self }
        let lowered = Set(names.map { ListSyntax.lower($0) })
        var copy = self
        copy.pairs.removeAll { lowered.contains(ListSyntax.lower($0.name)) }
        return copy
    }

    /// A copy with one more line at the end.
    ///
    /// ```swift
    /// HTTPFields().appending("Age", "0").first("age")  // "0"
    /// ```
    public func appending(_ name: String, _ value: String) -> HTTPFields {
        var copy = self
        copy.append(name, value)
        return copy
    }

    /// A copy with every line of `other` appended.
    ///
    /// ```swift
    /// (["A": "1"] as HTTPFields).appending(contentsOf: ["B": "2"]).count  // 2
    /// ```
    public func appending(contentsOf other: HTTPFields) -> HTTPFields {
        var copy = self
        copy.pairs.append(contentsOf: other.pairs)
        return copy
    }

    /// A copy where every line named `name` is replaced by a single `name: value` line at the end.
    ///
    /// ```swift
    /// (["Age": "1", "Age": "2"] as HTTPFields).replacingAll("Age", with: "9").values("age")  // ["9"]
    /// ```
    public func replacingAll(_ name: String, with value: String) -> HTTPFields {
        removingAll(name).appending(name, value)
    }

    /// Appends one line.
    ///
    /// ```swift
    /// var f = HTTPFields(); f.append("Vary", "Accept")
    /// ```
    public mutating func append(_ name: String, _ value: String) {
        pairs.append((name: name, value: value))
    }

    /// Removes every line named `name`.
    ///
    /// ```swift
    /// var f: HTTPFields = ["Age": "1"]; f.removeAll("AGE")  // f.isEmpty
    /// ```
    public mutating func removeAll(_ name: String) {
        pairs.removeAll { ListSyntax.equalsIgnoringCase($0.name, name) }
    }

    /// Same lines in the same order; names compare case-insensitively, values exactly.
    ///
    /// ```swift
    /// (["ETag": "1"] as HTTPFields) == ["etag": "1"]  // true
    /// ```
    public static func == (lhs: HTTPFields, rhs: HTTPFields) -> Bool {
        guard lhs.pairs.count == rhs.pairs.count else { return false }
        for (a, b) in zip(lhs.pairs, rhs.pairs) {
            guard ListSyntax.equalsIgnoringCase(a.name, b.name), a.value == b.value else { return false }
        }
        return true
    }
}
