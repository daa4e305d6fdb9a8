// swift-tools-version: 6.1
// Tether: an edge gateway for BLE consumption devices and health telemetry.
// Logic lives in library targets that tests import; executables are one thin Entrypoint.swift each.

import PackageDescription

let package = Package(
    name: "Tether",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "LinkProtocol", targets: ["LinkProtocol"]),
        .library(name: "DeviceFirmware", targets: ["DeviceFirmware"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // The device link protocol as a pure, deterministic core: frame codec, reassembly, the gateway's
        // session state machine and the device-clock model. No sockets, no database, no clock inside.
        .target(name: "LinkProtocol"),

        // The device side of the link protocol (a firmware model on the same codec) and LinkPair, which joins
        // it to a gateway session under a manual clock with fault injection. Used by tests, fixture generation
        // and the BlueZ simulator.
        .target(name: "DeviceFirmware", dependencies: ["LinkProtocol"]),

        .testTarget(name: "LinkProtocolTests", dependencies: ["LinkProtocol"]),
        .testTarget(name: "DeviceFirmwareTests", dependencies: ["DeviceFirmware", "LinkProtocol"]),
    ],
    swiftLanguageModes: [.v6]
)
