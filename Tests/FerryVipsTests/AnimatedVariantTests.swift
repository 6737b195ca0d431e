#if canImport(Glibc)
import Glibc
#endif
import FerryImages
import FerryProtocol
import Foundation
import Testing
@testable import FerryVips

/// An animated GIF or WebP made into a GIF or WebP stays animated: every frame resized, each fitted to the box on
/// its own (a crop or a padding of the stacked frames would keep the middle one or pad the stack), in order, delays
/// kept. Into JPEG, PNG or AVIF: the first frame.
@Suite struct AnimatedVariantTests {
    /// Three 60×30 frames, red, green, blue, 200 ms each, written by ImageMagick (then by libvips as WebP).
    static func animation(_ format: String) throws -> [UInt8] {
        let gif = try run("/usr/bin/convert", ["-size", "60x30", "xc:red", "xc:lime", "xc:blue", "-set", "delay", "20", "-loop", "0", "OUT"],
                          output: "gif").file
        if format == "gif" { return gif }
        return try Vips.variant(of: gif, ImageVariant(width: nil, height: nil, format: .webp), maxPixels: 1_000_000).bytes
    }

    /// Runs a command-line tool in a scratch directory: `IN` in its arguments is a file holding `input`, `OUT` a
    /// file of type `output`. Its standard output, and the bytes it wrote to OUT.
    static func run(_ path: String, _ arguments: [String], input: [UInt8] = [], output: String = "txt") throws -> (stdout: String, file: [UInt8]) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-anim-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let inPath = dir.appendingPathComponent("in").path, outPath = dir.appendingPathComponent("out.\(output)").path
        try Data(input).write(to: URL(fileURLWithPath: inPath))
        let process = Process(), pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments.map { $0.replacingOccurrences(of: "IN", with: inPath).replacingOccurrences(of: "OUT", with: outPath) }
        process.standardOutput = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        return (text, (try? Array(Data(contentsOf: URL(fileURLWithPath: outPath)))) ?? [])
    }

    /// The colour at the centre of frame `frame` (red, green, blue, 0…255): cut out by libvips's command line,
    /// read by ImageMagick's.
    static func centre(of image: [UInt8], frame: Int, _ info: DecodedImage) throws -> [Int] {
        let png = try run("/usr/bin/vips", ["crop", info.pages > 1 ? "IN[n=-1]" : "IN", "OUT", "0", "\(frame * info.height)", "\(info.width)", "\(info.height)"],
                          input: image, output: "png").file
        let (x, y) = (info.width / 2, info.height / 2)
        let text = try run("/usr/bin/convert", ["IN", "-format", "%[fx:round(255*p{\(x),\(y)}.r)] %[fx:round(255*p{\(x),\(y)}.g)] %[fx:round(255*p{\(x),\(y)}.b)]", "info:"],
                           input: png).stdout
        return text.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    static let fits: [(ImageFit, Int, Int)] = [(.inside, 40, 20), (.cover, 40, 40), (.contain, 40, 40), (.fill, 40, 40), (.outside, 80, 40)]

    @Test(arguments: ["gif", "webp"]) func anAnimationStaysAnimatedInEveryFit(input: String) throws {
        let original = try AnimatedVariantTests.animation(input)
        #expect(try Vips.verify(original, maxPixels: 1_000_000) == DecodedImage(format: input, width: 60, height: 30, pages: 3))
        for output in [ImageOutputFormat.original, .webp] {
            for (fit, width, height) in AnimatedVariantTests.fits {
                let made = try Vips.variant(of: original, ImageVariant(width: 40, height: 40, fit: fit, format: output), maxPixels: 1_000_000)
                let name = output == .original ? input : output.rawValue
                let decoded = try Vips.verify(made.bytes, maxPixels: 1_000_000)
                #expect(decoded == DecodedImage(format: name, width: width, height: height, pages: 3), "\(input) → \(output) \(fit)")
                #expect(made.info == decoded)
                // Frames in order, each whole: the centre of frame k is its own colour.
                for (k, colour) in [[255, 0, 0], [0, 255, 0], [0, 0, 255]].enumerated() {
                    let seen = try AnimatedVariantTests.centre(of: made.bytes, frame: k, decoded)
                    #expect(seen.count == 3 && zip(seen, colour).allSatisfy { abs($0 - $1) < 40 }, "\(input) → \(name) \(fit) frame \(k): \(seen)")
                }
            }
        }
    }

    @Test func intoAStillFormatTheFirstFrame() throws {
        let original = try AnimatedVariantTests.animation("gif")
        for output in [ImageOutputFormat.png, .jpeg, .avif] {
            let made = try Vips.variant(of: original, ImageVariant(width: 40, height: 40, fit: .cover, format: output), maxPixels: 1_000_000)
            let decoded = try Vips.verify(made.bytes, maxPixels: 1_000_000)
            #expect(decoded == DecodedImage(format: output.rawValue, width: 40, height: 40, pages: 1))
            let seen = try AnimatedVariantTests.centre(of: made.bytes, frame: 0, decoded)
            #expect(seen.count == 3 && seen[0] > 200 && seen[1] < 60 && seen[2] < 60, "\(output): the red first frame, \(seen)")
        }
    }

    /// The delays come through (libvips keeps them in `delay`): a WebP made of the GIF plays at its speed.
    @Test func theDelaysAreKept() throws {
        let made = try Vips.variant(of: AnimatedVariantTests.animation("gif"), ImageVariant(width: 20, height: 20, fit: .cover, format: .webp), maxPixels: 1_000_000)
        let delays = try AnimatedVariantTests.run("/usr/bin/vipsheader", ["-f", "delay", "IN[n=-1]"], input: made.bytes).stdout
        #expect(delays.trimmingCharacters(in: .whitespacesAndNewlines) == "200 200 200")
    }
}
