#if FERRY_FUZZ
#if canImport(Glibc)
import Glibc
#endif

/// The target libFuzzer drives, chosen by `FERRY_FUZZ_TARGET` (frames, json, http, image).
private let selected: FuzzTarget = {
    let name = getenv("FERRY_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        fatalError("set FERRY_FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue))")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    selected.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
#endif

#if FERRY_FUZZ
/// libFuzzer's driver, for a `main` of our own: SwiftPM names an executable's entry point after its module
/// (`ferry_fuzz_main`) and links `main` to it, so libFuzzer's own `main` is never used.
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(_ argc: UnsafeMutablePointer<Int32>,
                       _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                       _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

@_cdecl("ferry_fuzz_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    var count = argc
    var vector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return runDriver(&count, &vector) { data, size in fuzzOneInput(data, size) }
}
#endif
