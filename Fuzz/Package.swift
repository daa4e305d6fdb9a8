// swift-tools-version: 6.1
// libFuzzer targets for the link protocol core (issue 2, item 7), the D-Bus wire reader (issue 4), the transcript
// and configuration readers (issue 12), the health characteristic parsers and the RACP client (issue 14), CBOR, the
// SMP codec and the MCUboot image verifier (issue 16). A package of its own so that the main package
// never builds with sanitizers. Build and run with ./run-smoke.sh (see README.md).

import PackageDescription

let package = Package(
    name: "TetherFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Tether", path: ".."),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),  // as tetherd (ConfigurationFuzzer)
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
            dependencies: [
                "FuzzSupport", .product(name: "LinkProtocol", package: "Tether"),
                .product(name: "TetherPrimitives", package: "Tether"), .product(name: "TetherSettings", package: "Tether"),
            ]
        ),

        // The firmware transcript reader, its writer (a round trip) and the replay `tether replay` runs on it.
        .executableTarget(
            name: "TranscriptFuzzer",
            dependencies: [.product(name: "TetherReplay", package: "Tether")]
        ),

        // The RACP client (HealthProfiles) driven by fuzzer-chosen records, indications, ATT errors, timers, disconnects
        // and deletions; its invariants (cursor monotonic, nothing committed twice) and the codec's round trips.
        .executableTarget(
            name: "RecordAccessFuzzer",
            dependencies: [
                "FuzzSupport", .product(name: "HealthProfiles", package: "Tether"),
                .product(name: "TetherPrimitives", package: "Tether"),
            ]
        ),

        // tetherd's TOML configuration reader: TOMLKit, the key-line scanner and every key's checks. Its sources are
        // tetherd's own Configuration folder through a symlink (Sources/ConfigurationFuzzer/Configuration), which
        // needs only Foundation, TOMLKit and the pure HealthProfiles core (the consent codes file's credentials):
        // depending on the TetherDaemon product would build all of tetherd's dependencies (NIO, BoringSSL, GRDB,
        // Hummingbird…) under ASan for a reader that uses none of them.
        .executableTarget(
            name: "ConfigurationFuzzer",
            dependencies: [.product(name: "TOMLKit", package: "TOMLKit"), .product(name: "HealthProfiles", package: "Tether")]
        ),

        // The User Data Service's User Control Point (HealthProfiles): indications and requests decoded, and the
        // consent procedure driven by fuzzer-chosen facts.
        .executableTarget(
            name: "UserControlPointFuzzer",
            dependencies: ["FuzzSupport", .product(name: "HealthProfiles", package: "Tether"), .product(name: "TetherPrimitives", package: "Tether")]
        ),

        // The change feed's pages as a gateway reads them: decoding, each change's rules and the page checksum's lines.
        .executableTarget(name: "ChangePageFuzzer", dependencies: [.product(name: "SyncContract", package: "Tether")]),

        // The CBOR decoder (limits, indefinite lengths, streaming prefix) and its preferred-serialization round trip.
        .executableTarget(name: "CBORFuzzer", dependencies: ["FuzzSupport", .product(name: "CBOR", package: "Tether")]),

        // SMP: notifications in fuzzer-chosen chunks through the reassembler, the client's matching, every typed
        // decoder, and the image uploader's promises (write sizes, buf_size, progress).
        .executableTarget(
            name: "SMPFuzzer",
            dependencies: [
                "FuzzSupport", .product(name: "SMP", package: "Tether"), .product(name: "CBOR", package: "Tether"),
                .product(name: "TetherPrimitives", package: "Tether"),
            ]
        ),

        // The health characteristic parsers (HealthProfiles' HealthDecoder) on every characteristic, the first input
        // byte choosing which, and their projection to observations.
        .executableTarget(
            name: "HealthCharacteristicFuzzer",
            dependencies: ["FuzzSupport", .product(name: "HealthProfiles", package: "Tether")]
        ),

        // The MCUboot image verifier (structure, hash, signature, trusted keys) and the trusted-key reader on any file.
        .executableTarget(
            name: "MCUbootImageFuzzer",
            dependencies: [.product(name: "MCUbootImage", package: "Tether")]
        ),

        // The simulated MCUmgr device (SMPDeviceModel): datagrams and resets in fuzzer-chosen order; every answer must
        // be a response to its request, and MCUboot must only ever boot an image that verifies.
        .executableTarget(
            name: "SMPDeviceFuzzer",
            dependencies: [
                .product(name: "SMPDeviceModel", package: "Tether"), .product(name: "SMP", package: "Tether"),
                .product(name: "CBOR", package: "Tether"),
            ]
        ),

        // tether-server's health projection request: the UTC day parser and the body's decoding (issue 15).
        .executableTarget(
            name: "HealthProjectionRequestFuzzer",
            dependencies: [.product(name: "SyncContract", package: "Tether")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

