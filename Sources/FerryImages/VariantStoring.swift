/// Keeps the variants the loader makes, beyond its memory tier: the daemon implements it with its cache store on
/// the loop thread (`LoopVariantStore`), tests with a counting fake. A variant is stored with what it is
/// (`StoredVariant`), under its `VariantKey`.
///
/// ```swift
/// if let v = await store.variant(key) { … } else { await store.keep(made, key) }
/// ```
public protocol VariantStoring: Sendable {
    /// The stored variant, if any (nil too when it cannot be read).
    func variant(_ key: VariantKey) async -> StoredVariant?
    /// Stores a variant and drops the variants of the original's other versions (its validator changed).
    func keep(_ variant: StoredVariant, _ key: VariantKey) async
}

/// A variant's bytes with what decoding them would say, stored as one value: a first line
/// `ferry-variant 1 FORMAT WIDTH HEIGHT ORIENTATION PAGES\n`, then the bytes. An original's verdict (it decoded,
/// and what it is) is one without bytes, under `VariantKey.verdict`.
///
/// ```swift
/// let v = StoredVariant(bytes: webp, info: DecodedImage(format: "webp", width: 200, height: 120))
/// StoredVariant(encoded: v.encoded) == v   // true
/// ```
public struct StoredVariant: Sendable, Equatable {
    public var bytes: [UInt8]
    public var info: DecodedImage

    public init(bytes: [UInt8], info: DecodedImage) {
        self.bytes = bytes
        self.info = info
    }

    private static let magic = "ferry-variant 1 "

    public var encoded: [UInt8] {
        Array("\(StoredVariant.magic)\(info.format) \(info.width) \(info.height) \(info.orientation) \(info.pages)\n".utf8) + bytes
    }

    /// Nil for bytes that are not a stored variant of this version (another version's, or damaged).
    public init?(encoded: [UInt8]) {
        guard let newline = encoded.prefix(128).firstIndex(of: 0x0A) else { return nil }
        let line = String(decoding: encoded[..<newline], as: UTF8.self)
        guard line.hasPrefix(StoredVariant.magic) else { return nil }
        let fields = line.dropFirst(StoredVariant.magic.count).split(separator: " ")
        guard fields.count == 5, let width = Int(fields[1]), let height = Int(fields[2]), let orientation = Int(fields[3]),
              let pages = Int(fields[4]), width > 0, height > 0, (1...8).contains(orientation), pages > 0 else { return nil }
        self.init(bytes: Array(encoded[(newline + 1)...]),
                  info: DecodedImage(format: String(fields[0]), width: width, height: height, orientation: orientation, pages: pages))
    }
}
