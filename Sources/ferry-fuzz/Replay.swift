#if !FERRY_FUZZ
import Foundation

/// Without the fuzzer (a plain `swift build`): replays files through a target, so a corpus or a crash input can be
/// checked in any build.
///
/// ```
/// ferry-fuzz json Tests/Fuzz/corpus/json .build/fuzz-out/json/crash-1234
/// ```
@main
struct Replay {
    static func main() {
        let args = CommandLine.arguments.dropFirst()
        guard let name = args.first, let target = FuzzTarget(rawValue: name) else {
            print("usage: ferry-fuzz \(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")) PATH...")
            exit(2)
        }
        var count = 0
        for path in args.dropFirst() {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else { continue }
            let files = isDir.boolValue
                ? (try? FileManager.default.contentsOfDirectory(atPath: path).map { path + "/" + $0 }) ?? [] : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                data.withUnsafeBytes { target.run($0) }
                count += 1
            }
        }
        print("\(name): \(count) inputs, none crashed")
    }
}
#endif
