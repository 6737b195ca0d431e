import FerryBytes
import FerryProtocol

/// Where variants live in the store: under the original's key and validator, so that an original that changed
/// (a new ETag, Last-Modified or body digest) has new variants, and its old ones can be found and dropped.
///
/// ```swift
/// let key = VariantKey(originalKey: "https://img.test/a.jpg", validator: "\"v2\"", variant: v)
/// key.storeKey         // "<sha-256 of the original key>/<checksum of the validator>/w=200;h=200;…"
/// key.originalPrefix   // "<sha-256 of the original key>/": every variant of every version of it
/// ```
public struct VariantKey: Sendable, Equatable {
    /// The store's namespace for variants.
    public static let namespace = "ferry.image-variants"

    public let originalPrefix: String
    public let versionPrefix: String
    public let storeKey: String

    public init(originalKey: String, validator: String, variant: ImageVariant) {
        self.init(originalKey: originalKey, validator: validator, part: variant.keyPart)
    }

    /// Where an original's verdict is kept: that these bytes (their length and `Checksum64`) of this version
    /// decoded, and what they are (a `StoredVariant` without bytes). A disk hit of the original then costs no decode.
    public static func verdict(originalKey: String, validator: String, count: Int, checksum: UInt64) -> VariantKey {
        VariantKey(originalKey: originalKey, validator: validator, part: "verdict \(count) " + String(checksum, radix: 16))
    }

    private init(originalKey: String, validator: String, part: String) {
        originalPrefix = SHA256.hex(of: Array(originalKey.utf8)) + "/"
        versionPrefix = originalPrefix + String(Checksum64.of(Array(validator.utf8)), radix: 16) + "/"
        storeKey = versionPrefix + part
    }
}
