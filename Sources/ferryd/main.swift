#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryServer

/// ferryd: parse flags, run the server, map failures to exit codes (0 clean stop, 1 could not start, 2 usage).
func writeStderr(_ s: String) {
    var line = s + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

do {
    let args = try DaemonOptions.parser.parse(Array(CommandLine.arguments.dropFirst()))
    if args.has("help") {
        print(DaemonOptions.usage)
        exit(0)
    }
    if args.has("version") {
        print("ferryd \(ferryVersion)")
        exit(0)
    }
    let config = try DaemonOptions.config(from: args)
    let server = Server(config: config)
    do {
        try server.run()
    } catch {
        writeStderr("ferryd: \(error)")
        exit(1)
    }
} catch {
    writeStderr("ferryd: \(error)\n\n\(DaemonOptions.usage)")
    exit(2)
}
