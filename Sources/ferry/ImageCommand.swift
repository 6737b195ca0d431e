import FerryArgs
import FerryClient
import FerryProtocol

/// `ferry image URL -o FILE | --info`, `ferry image prefetch URL...`: the shared image loader from the shell.
struct ImageCommand {
    let args: ParsedArgs
    let commands: Commands

    static let usage = """
        Usage: ferry image URL -o FILE        write the image's bytes to FILE (- for stdout)
               ferry image URL --info         print e.g. "jpeg 640x360 23.1 KB (memory)"
               ferry image URL --width 200 --height 200 --fit cover --format webp -o thumb.webp
                                              a variant, made once by the daemon for every client
               ferry image prefetch URL...    queue downloads that warm the caches (with variant options: make
                                              that variant of each)
               ferry image evict URL          drop a URL from the loader's memory
        Options: --cache MODE, --timeout 10s, -H 'Name: value' (repeatable), --json, --socket PATH;
        variants: --width N, --height N, --fit inside|cover|contain|fill|outside, --format original|jpeg|png|webp|avif,
        --quality 1-100, --density 1-4.
        A body that is not an image fails with invalid_image (exit 1).
        """

    func run() async throws(CommandFailure) {
        let words = Array(args.positionals.dropFirst())
        guard let first = words.first else { throw CommandFailure(code: .usage, message: ImageCommand.usage) }
        let client = try await commands.launcher.connect()
        defer { client.close() }
        switch first {
        case "prefetch":
            guard words.count > 1 else { throw CommandFailure(code: .usage, message: ImageCommand.usage) }
            let variant = try ImageCommand.variant(args)
            let queued = try await commands.run { try await client.prefetchImages(Array(words.dropFirst()), variant: variant) }
            print("queued \(queued) of \(words.count - 1)")
        case "evict":
            guard words.count == 2 else { throw CommandFailure(code: .usage, message: ImageCommand.usage) }
            let evicted = try await commands.run { try await client.evictImage(words[1]) }
            print(evicted ? "evicted" : "not in memory")
        default:
            guard words.count == 1 else { throw CommandFailure(code: .usage, message: ImageCommand.usage) }
            try await get(client, first)
        }
    }

    private func get(_ client: FerryClient, _ url: String) async throws(CommandFailure) {
        let request = try FetchCommand(args: args, commands: commands).buildRequest(url: url)
        let output = args.value("output")
        guard output != nil || args.has("info") || args.has("json") else {
            throw CommandFailure(code: .usage, message: "ferry image URL needs -o FILE, --info or --json\n\n" + ImageCommand.usage)
        }
        let variant = try ImageCommand.variant(args)
        let image = try await commands.run {
            try await client.image(url, variant: variant, headers: request.headers, cache: request.cache, timeout: request.timeout)
        }
        if let output {
            if output == "-" { writeStdout(image.bytes) } else { try writeFile(output, image.bytes) }
        }
        if args.has("json") {
            print(jsonLine(.object(["format": .string(image.format), "width": .int(Int64(image.width)),
                                    "height": .int(Int64(image.height)), "orientation": .int(Int64(image.orientation)),
                                    "pages": .int(Int64(image.pages)), "size": .int(Int64(image.bytes.count)),
                                    "source": .string(image.source?.rawValue ?? ""), "url": .string(image.url)])))
        } else if args.has("info") {
            print(ImageCommand.info(image))
        }
    }

    /// The variant the options ask for; nil without any. Values are checked by the daemon (one set of rules).
    static func variant(_ args: ParsedArgs) throws(CommandFailure) -> ImageVariant? {
        func number(_ name: String) throws(CommandFailure) -> Int? {
            guard let raw = args.value(name) else { return nil }
            guard let n = Int(raw) else { throw CommandFailure(code: .usage, message: "--\(name) needs a whole number, not \(raw)") }
            return n
        }
        func word<W: RawRepresentable & CaseIterable>(_ name: String, _: W.Type) throws(CommandFailure) -> W? where W.RawValue == String {
            guard let raw = args.value(name) else { return nil }
            guard let w = W(rawValue: raw) else {
                throw CommandFailure(code: .usage, message: "--\(name) must be one of \(W.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return w
        }
        guard ["width", "height", "fit", "format", "quality", "density"].contains(where: { args.value($0) != nil }) else { return nil }
        return ImageVariant(width: try number("width"), height: try number("height"), fit: try word("fit", ImageFit.self) ?? .inside,
                            format: try word("format", ImageOutputFormat.self) ?? .original, quality: try number("quality"),
                            density: try number("density") ?? 1)
    }

    /// `jpeg 640x360 23.1 KB (memory)`
    static func info(_ image: FerryImage) -> String {
        "\(image.format) \(image.width)x\(image.height) \(humanBytes(Int64(image.bytes.count))) (\(image.source?.rawValue ?? "unknown"))"
    }
}
