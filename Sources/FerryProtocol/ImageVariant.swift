/// A variant of an image (`image.get` with `width`, `height`, `fit`, `format`, `quality`, `density`): its box, how
/// it fills it, its encoding. The daemon makes it from arguments it checked (`ImageVariantArguments`); two requests
/// that would make the same bytes have the same `keyPart`. Clients send `arguments`.
///
/// ```swift
/// let v = ImageVariant(width: 100, height: 100, fit: .cover, format: .webp, density: 2)
/// v.boxWidth    // 200
/// v.keyPart     // "w=200;h=200;fit=cover;fmt=webp;q=0"
/// ```
public struct ImageVariant: Sendable, Equatable {
    /// The box in CSS pixels; nil: not bounded this way (at least one of the two is set).
    public var width: Int?
    public var height: Int?
    public var fit: ImageFit
    public var format: ImageOutputFormat
    /// 1…100; nil: the format's default.
    public var quality: Int?
    /// Device pixels per CSS pixel, 1…4: the box is `width × density` device pixels.
    public var density: Int

    /// The largest side of a box, in device pixels.
    public static let maxSide = 8192

    public init(width: Int?, height: Int?, fit: ImageFit = .inside, format: ImageOutputFormat = .original,
                quality: Int? = nil, density: Int = 1) {
        self.width = width
        self.height = height
        self.fit = fit
        self.format = format
        self.quality = quality
        self.density = density
    }

    /// The box in device pixels (0: not bounded this way).
    public var boxWidth: Int { (width ?? 0) * density }
    public var boxHeight: Int { (height ?? 0) * density }

    /// The `image.get` arguments that ask for this variant (only what differs from the defaults).
    public var arguments: JSONObject {
        var args: JSONObject = [:]
        if let width { args["width"] = .int(Int64(width)) }
        if let height { args["height"] = .int(Int64(height)) }
        if fit != .inside { args["fit"] = .string(fit.rawValue) }
        if format != .original { args["format"] = .string(format.rawValue) }
        if let quality { args["quality"] = .int(Int64(quality)) }
        if density != 1 { args["density"] = .int(Int64(density)) }
        return args
    }

    /// What identifies the bytes this variant makes from one original: the box in device pixels (so 100 at
    /// density 2 and 200 at density 1 are one variant), the fit, the format and the quality.
    public var keyPart: String { "w=\(boxWidth);h=\(boxHeight);fit=\(fit.rawValue);fmt=\(format.rawValue);q=\(quality ?? 0)" }
}
