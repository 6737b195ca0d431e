import FerryImages
import FerryProtocol

/// `ImageDecoding` with libvips on a `WorkerPool`: at most `pool.size` images decode at once, so decoded pixels
/// take at most `pool.size × maxPixels × 4` bytes (the pixel limit is checked from the header first).
///
/// ```swift
/// let decoder = VipsDecoder(pool: WorkerPool(threads: 2, name: "ferry-image"))
/// let decoded = try await decoder.verify(bytes, maxPixels: 100_000_000)
/// ```
public final class VipsDecoder: ImageDecoding {
    public let pool: WorkerPool

    public init(pool: WorkerPool) {
        self.pool = pool
    }

    public func verify(_ bytes: [UInt8], maxPixels: Int) async throws(ImageDecodeError) -> DecodedImage {
        try await pool.run { Result { () throws(ImageDecodeError) in try Vips.verify(bytes, maxPixels: maxPixels) } }.get()
    }

    /// A cancelled caller stops the resize between tiles: its pool thread is free for the next job at once.
    public func variant(of bytes: [UInt8], _ variant: ImageVariant, maxPixels: Int) async throws(ImageDecodeError) -> StoredVariant {
        let cancel = CancelFlag()
        return try await withTaskCancellationHandler {
            await pool.run {
                if cancel.isSet { return Result<StoredVariant, ImageDecodeError>.failure(.cancelled) }  // before it began
                return Result { () throws(ImageDecodeError) in try Vips.variant(of: bytes, variant, maxPixels: maxPixels, cancel: cancel) }
            }
        } onCancel: {
            cancel.set()
        }.get()
    }
}
