// swift-tools-version: 6.1
// Tether benchmarks: a package of its own so that the main package's `swift build` and `swift test` never build
// ordo-one/benchmark. Run with `swift package --disable-sandbox benchmark` (see README.md).

import PackageDescription

let package = Package(
    name: "TetherBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Tether", path: ".."),
        // Only the malloc interposer: the default "RuntimeInterposer" trait (ARC metrics) crashes on this toolchain.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // Frame decoding throughput and allocations per frame against a copy+CRC floor (issue 2, item 8).
        .executableTarget(
            name: "LinkCodec",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "LinkProtocol", package: "Tether"),
            ],
            path: "Benchmarks/LinkCodec",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
