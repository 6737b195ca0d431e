import FerryArgs
import FerryClient

/// `ferry image URL -o FILE | --info`, `ferry image prefetch URL...`: the shared image loader from the shell.
struct ImageCommand {
    let args: ParsedArgs
    let commands: Commands

    static let usage = """
        Usage: ferry image URL -o FILE        write the image's bytes to FILE (- for stdout)
               ferry image URL --info         print e.g. "jpeg 640x360 23.1 KB (memory)"
               ferry image prefetch URL...    queue downloads that warm the caches
               ferry image evict URL          drop a URL from the loader's memory
        Options: --cache MODE, --timeout 10s, -H 'Name: value' (repeatable), --json, --socket PATH.
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
            let queued = try await commands.run { try await client.prefetchImages(Array(words.dropFirst())) }
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
        let image = try await commands.run {
            try await client.image(url, headers: request.headers, cache: request.cache, timeout: request.timeout)
        }
        if let output {
            if output == "-" { writeStdout(image.bytes) } else { try writeFile(output, image.bytes) }
        }
        if args.has("json") {
            print(jsonLine(.object(["format": .string(image.format), "width": .int(Int64(image.width)),
                                    "height": .int(Int64(image.height)), "size": .int(Int64(image.bytes.count)),
                                    "source": .string(image.source?.rawValue ?? ""), "url": .string(image.url)])))
        } else if args.has("info") {
            print(ImageCommand.info(image))
        }
    }

    /// `jpeg 640x360 23.1 KB (memory)`
    static func info(_ image: FerryImage) -> String {
        "\(image.format) \(image.width)x\(image.height) \(humanBytes(Int64(image.bytes.count))) (\(image.source?.rawValue ?? "unknown"))"
    }
}
