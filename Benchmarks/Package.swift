// swift-tools-version: 6.1
// Tether benchmarks: a package of its own so that the main package's `swift build` and `swift test` never build
// ordo-one/benchmark. Run with `swift package --disable-sandbox benchmark` (see README.md).

import PackageDescription

let package = Package(
    name: "TetherBenchmarks",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "tether-store-bench", targets: ["TetherStoreBench"]),
        .executable(name: "tether-sync-bench", targets: ["TetherSyncBench"]),
        .executable(name: "tether-gateway-bench", targets: ["TetherGatewayBench"]),
        .executable(name: "tether-smp-ble-bench", targets: ["TetherSMPBLEBench"]),
    ],
    dependencies: [
        .package(name: "Tether", path: ".."),
        // Only the malloc interposer: the default "RuntimeInterposer" trait (ARC metrics) crashes on this toolchain.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
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

        // Parse throughput per health characteristic, with and without the projection to observations, against a
        // byte-sum floor (issue 14, item 8).
        .executableTarget(
            name: "HealthParsing",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HealthProfiles", package: "Tether"),
            ],
            path: "Benchmarks/HealthParsing",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),

        // Whole-system benchmarks: executables that print their figures, run in release by scripts/ (they do not
        // use ordo-one/benchmark, so building one never builds it).
        // Durable events/s with ACK-after-commit through GroupCommitter against raw sqlite3 inserts, and durable health
        // samples/s through HealthStore against raw sqlite3 at the same batch size and durability (docs/design/store.md).
        .executableTarget(
            name: "TetherStoreBench",
            dependencies: [
                .product(name: "TetherStore", package: "Tether"), .product(name: "LinkProtocol", package: "Tether"),
                .product(name: "TetherPrimitives", package: "Tether"),
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Sources/tether-store-bench"
        ),
        // Drains queued commands, or health samples through the health uploader, to the reference server on loopback
        // (SQLite and PostgreSQL), and measures the server's ingest with concurrent gateways (docs/measurements/sync.md).
        .executableTarget(
            name: "TetherSyncBench",
            dependencies: [
                .product(name: "TetherSync", package: "Tether"), .product(name: "TetherServer", package: "Tether"),
                .product(name: "TetherSyncTesting", package: "Tether"), .product(name: "TetherStore", package: "Tether"),
                .product(name: "SyncContract", package: "Tether"), .product(name: "LinkProtocol", package: "Tether"),
                .product(name: "TetherPrimitives", package: "Tether"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Sources/tether-sync-bench"
        ),
        // Notifications/s and CPU per notification from N simulated devices (tether-sim as a child process): Tether
        // over StartNotify and AcquireNotify against bleak, same stream, same run (docs/design/gateway.md).
        .target(
            name: "GatewayBenchmark",
            dependencies: [
                .product(name: "TetherGateway", package: "Tether"), .product(name: "BlueZ", package: "Tether"),
                .product(name: "DBus", package: "Tether"), .product(name: "LinkProtocol", package: "Tether"),
                .product(name: "TetherPrimitives", package: "Tether"),
            ],
            path: "Sources/GatewayBenchmark"
        ),
        .executableTarget(name: "TetherGatewayBench", dependencies: ["GatewayBenchmark"], path: "Sources/tether-gateway-bench"),
        // One image upload by Tether's SMP BLE transport to tether-sim's MCUmgr device, timed as smpclient's is
        // (scripts/bench/smp-ble-throughput.sh; docs/design/firmware-ble.md, "Throughput").
        .executableTarget(
            name: "TetherSMPBLEBench",
            dependencies: [
                .product(name: "TetherFirmware", package: "Tether"), .product(name: "SMP", package: "Tether"),
                .product(name: "BlueZ", package: "Tether"), .product(name: "DBus", package: "Tether"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/tether-smp-ble-bench"
        ),
    ],
    swiftLanguageModes: [.v6]
)
