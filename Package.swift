// swift-tools-version:6.0
// Ferry: a local fetch-and-cache daemon. Dependencies point one way:
// executables → FerryServer / FerryClient → FerryProtocol (no I/O, no C imports).
import PackageDescription

// The daemon's hot path (frame → scan → memory tier → reply) in release builds: exclusivity is checked at compile
// time and in debug builds (every test run), not by the runtime on each access of a class's stored property, which
// cost 9 % of a pipelined cache hit (BENCHMARKS.md, issue 12).
let hotPathSettings: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "Ferry",
    products: [
        .executable(name: "ferryd", targets: ["ferryd"]),
        .executable(name: "ferry", targets: ["ferry"]),
        .library(name: "FerryClient", targets: ["FerryClient", "FerryCodable"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        // libcurl for `fetch`, with a shim of typed setters (`curl_easy_setopt` is variadic, which Swift cannot call).
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Descriptor passing (SCM_RIGHTS), sealed memory files and copy_file_range: the calls Swift's Glibc module
        // cannot make (CMSG_* macros, memfd seals), for the daemon's and the clients' side of "bodies as descriptors".
        .target(name: "CFerryIO"),
        // Byte helpers a library would give: one big-endian codec (frames, journal, stored responses) and byte-wise
        // UTF-8 equality (cache keys, JSON member names). Pure Swift.
        .target(name: "FerryBytes"),
        // Pure Swift, but `rounded()` and friends need libm, which nothing else links here.
        .target(name: "FerryProtocol", dependencies: ["FerryBytes"], swiftSettings: hotPathSettings, linkerSettings: [.linkedLibrary("m")]),
        // Cache policy: LRU with a byte budget, keys, hashing. Pure Swift, tested without sockets or files.
        // Cross-module optimisation: the memory tier (`MemoryLRU<CacheKey, CacheEntry>`) is then specialised where
        // FerryStore uses it instead of running as generic code on every cache hit (measured in BENCHMARKS.md).
        .target(
            name: "FerryCache",
            dependencies: ["FerryBytes"],
            swiftSettings: [.unsafeFlags(["-cross-module-optimization"])] + hotPathSettings,
            linkerSettings: [.linkedLibrary("m")]
        ),
        // The storage engine: SQLite index (WAL) + content-addressed blob files + a disk worker thread.
        .target(name: "FerryStore", dependencies: ["FerryCache", "FerryBytes", "CSQLite", "CFerryIO"], swiftSettings: hotPathSettings),
        .target(name: "FerryArgs", linkerSettings: [.linkedLibrary("m")]),
        // The event loop: libuv's loop, timers, signals, polls, pipes and the cross-thread mailbox behind small Swift
        // types, and the wall clock. With the fetch transport, the only code that imports CLibUV.
        .target(name: "FerryLoop", dependencies: ["CLibUV", "CFerryIO"], swiftSettings: hotPathSettings),
        // HTTP caching policy (RFC 9111, shared cache): parsing, freshness, validation, keys. Pure Swift, no C imports;
        // the request cache modes are wire words of FerryProtocol.
        .target(name: "FerryHTTPCache", dependencies: ["FerryProtocol", "FerryBytes"]),
        // Image format and pixel size from the bytes (PNG, JPEG, GIF, WebP, BMP, HEIC, AVIF). Pure Swift.
        .target(name: "FerryImageFormat"),
        // The fetch engine: libcurl's multi on the loop (the origin transport), transfers, coalescing, redirects,
        // revalidation and the HTTP cache's records. Typed in (FetchSpec), typed out (FetchOutcome); no JSON.
        .target(
            name: "FerryFetch",
            dependencies: ["FerryProtocol", "FerryHTTPCache", "FerryCache", "FerryStore", "FerryLoop", "FerryBytes", "CCurl"]
        ),
        // The image loader: an actor with its memory tier, the in-flight table and the sniffing stage, fed through
        // `ImageFetching` (which the server implements with the fetch engine) and `ImageDecoding` (FerryVips).
        // Knows nothing of loops, libcurl or libvips.
        .target(name: "FerryImages", dependencies: ["FerryProtocol", "FerryBytes", "FerryCache", "FerryHTTPCache", "FerryImageFormat"]),
        // libvips (Debian libvips-dev): decoding, verification and variants of images. `CVips` links it and carries
        // the include paths its headers need: GLib's (`pkg-config gobject-2.0`; vips.pc's own flags hold `-pthread`,
        // which SwiftPM refuses with a warning, and its headers are in /usr/include). `CFerryVips` is the C shim of
        // typed calls (libvips's API is variadic); `FerryVips` runs them on a bounded pool of threads, off the loop
        // and off the loader's actor.
        .systemLibrary(
            name: "CVips",
            pkgConfig: "gobject-2.0",
            providers: [.apt(["libvips-dev"])]
        ),
        .target(name: "CFerryVips", dependencies: ["CVips"], linkerSettings: [.linkedLibrary("vips")]),
        .target(name: "FerryVips", dependencies: ["FerryImages", "FerryProtocol", "CFerryVips"]),
        // Redis as a second tier for a fleet (issue 16): hiredis (Debian libhiredis-dev) with a libuv adapter of ours, on
        // the daemon's own loop. `CFerryRedis` keeps hiredis's types in C; `FerryRedis` is the connection, its
        // reconnecting and its command timeouts.
        .target(name: "CFerryRedis", dependencies: ["CLibUV"], linkerSettings: [.linkedLibrary("hiredis")]),
        .target(name: "FerryRedis", dependencies: ["FerryLoop", "CFerryRedis"]),
        .target(
            name: "FerryServer",
            dependencies: ["FerryProtocol", "FerryCache", "FerryStore", "FerryHTTPCache", "FerryImageFormat", "FerryLoop",
                           "FerryFetch", "FerryImages", "FerryVips", "FerryRedis"],
            swiftSettings: hotPathSettings
        ),
        // The client's call path is hot too (BENCHMARKS.md: FerryClient beside a hand-written pipelined client).
        .target(name: "FerryClient", dependencies: ["FerryProtocol", "CFerryIO"], swiftSettings: hotPathSettings),
        .target(name: "FerryCodable", dependencies: ["FerryClient"]),
        .executableTarget(name: "ferryd", dependencies: ["FerryServer", "FerryStore", "FerryCache", "FerryArgs", "FerryHTTPCache", "FerryRedis"],
                         // man page, systemd units, example configuration: installed by `make install`.
                         exclude: ["dist"]),
        // Shell users pay the CLI's start-up on every call: the Swift runtime linked statically saves ~1 ms a run
        // (measured in BENCHMARKS.md).
        .executableTarget(
            name: "ferry", dependencies: ["FerryClient", "FerryArgs", "CFerryIO"],
            exclude: ["dist"],  // the man page, installed by `make install`
            linkerSettings: [.unsafeFlags(["-static-stdlib"])]
        ),
        .executableTarget(name: "ferry-bench", dependencies: ["FerryClient", "FerryProtocol", "FerryArgs"]),
        // libFuzzer targets for the parsers of client and origin input (`make fuzz`); a plain build replays a corpus.
        .executableTarget(name: "ferry-fuzz", dependencies: ["FerryProtocol", "FerryHTTPCache", "FerryImageFormat"]),
        .testTarget(name: "FerryBytesTests", dependencies: ["FerryBytes"]),
        .testTarget(name: "FerryProtocolTests", dependencies: ["FerryProtocol"]),
        .testTarget(name: "FerryLoopTests", dependencies: ["FerryLoop"]),
        .testTarget(name: "FerryArgsTests", dependencies: ["FerryArgs"]),
        .testTarget(name: "FerryCacheTests", dependencies: ["FerryCache"]),
        .testTarget(name: "FerryHTTPCacheTests", dependencies: ["FerryHTTPCache", "FerryProtocol"]),
        .testTarget(name: "FerryImageFormatTests", dependencies: ["FerryImageFormat"], resources: [.copy("Fixtures")]),
        .testTarget(name: "FerryStoreTests", dependencies: ["FerryStore", "FerryCache", "FerryBytes"]),
        .testTarget(name: "FerryServerTests", dependencies: ["FerryServer", "FerryProtocol", "FerryLoop", "FerryFetch", "FerryImages"]),
        .testTarget(name: "FerryFetchTests", dependencies: ["FerryFetch", "FerryHTTPCache", "FerryProtocol"]),
        .testTarget(name: "FerryImagesTests", dependencies: ["FerryImages", "FerryImageFormat", "FerryProtocol", "FerryBytes"]),
        .testTarget(name: "FerryClientTests", dependencies: ["FerryClient"]),
        .testTarget(name: "FerryRedisTests", dependencies: ["FerryRedis", "FerryLoop"]),
        .testTarget(name: "FerryVipsTests", dependencies: ["FerryVips", "CFerryVips", "FerryImages", "FerryImageFormat", "FerryProtocol"]),
        .testTarget(
            name: "FerryIntegrationTests",
            dependencies: ["FerryClient", "FerryCodable", "FerryProtocol"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
