import FerryFetch
import FerryImages
import FerryProtocol

/// Reading the variant arguments of `image.get` (`width`, `height`, `fit`, `format`, `quality`, `density`): none of
/// them, the original's bytes; any, a variant. Null is absent, as everywhere.
///
/// ```swift
/// ImageVariantArguments.variant(["url": "…", "width": 200, "fit": "cover"])   // .success(ImageVariant(width: 200, …))
/// ImageVariantArguments.variant(["url": "…"])                                 // .success(nil)
/// ```
enum ImageVariantArguments {
    static let names = ["width", "height", "fit", "format", "quality", "density"]

    static func variant(_ args: JSONObject) throws(FetchFailure) -> ImageVariant? {
        guard names.contains(where: { args[$0] != nil && args[$0] != .null }) else { return nil }
        let side = 1...ImageVariant.maxSide
        let width = try FetchArguments.int(args, "width", side), height = try FetchArguments.int(args, "height", side)
        let fit = try word(args, "fit", default: ImageFit.inside)
        let format = try word(args, "format", default: ImageOutputFormat.original)
        let quality = try FetchArguments.int(args, "quality", 1...100)
        let density = try FetchArguments.int(args, "density", 1...4) ?? 1
        if fit == .contain || fit == .fill, width == nil || height == nil {
            throw .invalidArgument("\"fit\": \"\(fit.rawValue)\" needs both \"width\" and \"height\"")
        }
        if width == nil && height == nil && format == .original && quality == nil {
            throw .invalidArgument("a variant needs \"width\", \"height\", a \"format\" or a \"quality\"")
        }
        let variant = ImageVariant(width: width, height: height, fit: fit, format: format, quality: quality, density: density)
        if variant.boxWidth > ImageVariant.maxSide || variant.boxHeight > ImageVariant.maxSide {
            throw .invalidArgument("\"width\" and \"height\" times \"density\" must be at most \(ImageVariant.maxSide) pixels")
        }
        return variant
    }

    private static func word<W: RawRepresentable & CaseIterable>(_ args: JSONObject, _ name: String,
                                                                 default value: W) throws(FetchFailure) -> W where W.RawValue == String {
        guard let s = try FetchArguments.string(args, name) else { return value }
        guard let w = W(rawValue: s) else {
            throw .invalidArgument("\"\(name)\" must be one of \(W.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return w
    }
}
