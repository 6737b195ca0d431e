import FerryImages
import FerryProtocol

/// `ImageDecoding` with libvips on a `WorkerPool`: at most `pool.size` images decode at once, so decoded pixels
/// take at most `pool.size × maxPixels × 4` bytes (the pixel limit is checked from the header first). What each
/// decode or resize holds while it runs is counted in `memory` (the daemon's budget), from its header
/// (`Vips.workingBytes`).
///
/// ```swift
/// let decoder = VipsDecoder(pool: WorkerPool(threads: 2, name: "ferry-image"))
/// let decoded = try await decoder.verify(bytes, maxPixels: 100_000_000)
/// ```
public final class VipsDecoder: ImageDecoding {
    public let pool: WorkerPool
    private let memory: DecodeMemory?

    public init(pool: WorkerPool, memory: DecodeMemory? = nil) {
        self.pool = pool
        self.memory = memory
    }

    /// Runs `work` with the memory its image's decode holds counted for its duration. On a pool thread.
    private static func counted<T>(_ bytes: ArraySlice<UInt8>, maxPixels: Int, _ memory: DecodeMemory?,
                                   _ work: () throws(ImageDecodeError) -> T) throws(ImageDecodeError) -> T {
        guard let memory else { return try work() }
        let header = try Vips.header(bytes)
        let taken = min(Vips.workingBytes(of: header), maxPixels * 4)
        memory.taking(taken)
        defer { memory.giving(taken) }
        return try work()
    }

    public func verify(_ bytes: ArraySlice<UInt8>, maxPixels: Int) async throws(ImageDecodeError) -> DecodedImage {
        let memory = self.memory
        return try await pool.run {
            Result { () throws(ImageDecodeError) in
                try VipsDecoder.counted(bytes, maxPixels: maxPixels, memory) { () throws(ImageDecodeError) in
                    try Vips.verify(bytes, maxPixels: maxPixels)
                }
            }
        }.get()
    }

    /// A cancelled caller stops the resize between tiles: its pool thread is free for the next job at once.
    public func variant(of bytes: ArraySlice<UInt8>, _ variant: ImageVariant, maxPixels: Int) async throws(ImageDecodeError) -> StoredVariant {
        let cancel = CancelFlag(), memory = self.memory
        return try await withTaskCancellationHandler {
            await pool.run {
                if cancel.isSet { return Result<StoredVariant, ImageDecodeError>.failure(.cancelled) }  // before it began
                return Result { () throws(ImageDecodeError) in
                    try VipsDecoder.counted(bytes, maxPixels: maxPixels, memory) { () throws(ImageDecodeError) in
                        try Vips.variant(of: bytes, variant, maxPixels: maxPixels, cancel: cancel)
                    }
                }
            }
        } onCancel: {
            cancel.set()
        }.get()
    }
}
