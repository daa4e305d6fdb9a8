// swift-tools-version: 6.1
// Tether: an edge gateway for BLE consumption devices and health telemetry.
// Logic lives in library targets that tests import; executables are one thin Entrypoint.swift each.

import PackageDescription

let package = Package(
    name: "Tether",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "tether", targets: ["TetherCommand"]),
        .executable(name: "tether-fixtures", targets: ["TetherFixturesCommand"]),
        .library(name: "LinkProtocol", targets: ["LinkProtocol"]),
        .library(name: "DeviceFirmware", targets: ["DeviceFirmware"]),
        .library(name: "DBus", targets: ["DBus"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // The device link protocol as a pure, deterministic core: frame codec, reassembly, the gateway's
        // session state machine and the device-clock model. No sockets, no database, no clock inside.
        .target(
            name: "LinkProtocol",
            // BootClock's rounding calls libm; release builds inline it, debug builds of executables must link it.
            linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]
        ),

        // The device side of the link protocol (a firmware model on the same codec) and LinkPair, which joins
        // it to a gateway session under a manual clock with fault injection. Used by tests, fixture generation
        // and the BlueZ simulator.
        .target(name: "DeviceFirmware", dependencies: ["LinkProtocol"]),

        // Firmware transcripts: the text format, the replayer that drives them through a real gateway session,
        // the outcome it reports, and the scenarios that recorded Firmware-fixtures/.
        .target(name: "TetherReplay", dependencies: ["LinkProtocol", "DeviceFirmware"]),

        // The technician CLI's command tree (the `tether` executable is a thin entry point over it).
        .target(
            name: "TetherCLI",
            dependencies: [
                "TetherReplay",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "TetherCommand", dependencies: ["TetherCLI"]),

        // Regenerates Firmware-fixtures/ from the firmware model. Run by developers, never by CI: the
        // committed transcripts are the fixed record that a codec change must keep passing.
        .executableTarget(
            name: "TetherFixturesCommand",
            dependencies: [
                "TetherReplay",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // libdbus-1 as a Swift system library (a module map and a shim header of its constants).
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),

        // D-Bus for Swift on libdbus: values, private connections with one loop thread each, calls, signals, names,
        // exported objects (Properties, Introspectable, ObjectManager) and a private dbus-daemon for tests.
        .target(name: "DBus", dependencies: ["CDBus"]),

        .testTarget(name: "LinkProtocolTests", dependencies: ["LinkProtocol"]),
        .testTarget(name: "DeviceFirmwareTests", dependencies: ["DeviceFirmware", "LinkProtocol"]),
        .testTarget(name: "TetherReplayTests", dependencies: ["TetherReplay", "TetherCLI", "DeviceFirmware", "LinkProtocol"]),
        .testTarget(name: "DBusTests", dependencies: ["DBus"]),
    ],
    swiftLanguageModes: [.v6]
)
