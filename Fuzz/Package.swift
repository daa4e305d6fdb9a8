// swift-tools-version: 6.1
// libFuzzer targets for the link protocol core (issue 2, item 7) and the D-Bus wire reader (issue 4). A package of its own so that the main package
// never builds with sanitizers. Build and run with ./run-smoke.sh (see README.md).

import PackageDescription

let package = Package(
    name: "TetherFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Tether", path: ".."),
    ],
    targets: [
        // Reads structured values out of a fuzzer input (sizes, choices, byte runs) without ever failing.
        .target(name: "FuzzSupport"),

        // FrameDecoder fed in fuzzer-chosen chunks; every decoded message must survive an encode/decode round trip.
        .executableTarget(
            name: "LinkFrameFuzzer",
            dependencies: ["FuzzSupport", .product(name: "LinkProtocol", package: "Tether")]
        ),

        // The D-Bus wire-protocol reader (framing, header, body, selective reads) over a fuzzer-chosen byte stream.
        .executableTarget(
            name: "DBusWireFuzzer",
            dependencies: [.product(name: "DBus", package: "Tether")]
        ),

        // LinkSession driven by a fuzzer-chosen script of connects, ATT values, timers, persists and disconnects.
        .executableTarget(
            name: "LinkSessionFuzzer",
            dependencies: ["FuzzSupport", .product(name: "LinkProtocol", package: "Tether")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
