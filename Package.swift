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
        .library(name: "TetherStore", targets: ["TetherStore"]),
        .executable(name: "tether-store-crashtest", targets: ["TetherStoreCrashTest"]),
        .executable(name: "tether-store-bench", targets: ["TetherStoreBench"]),
        .library(name: "BlueZSimulator", targets: ["BlueZSimulator"]),
        .executable(name: "tether-sim", targets: ["TetherSimCommand"]),
        .library(name: "BlueZ", targets: ["BlueZ"]),
        .library(name: "ConnectionSupervisor", targets: ["ConnectionSupervisor"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
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
                "TetherStore",
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

        // The local-first store: one GatewayDatabase owning a WAL DatabasePool (synchronous=FULL), the schema and
        // its migrations, the consumption and device-settings services, the outbox, group commit with
        // ACK-after-commit, and storage limits. Depends on the link core for the items it stores, never the reverse.
        .target(
            name: "TetherStore",
            dependencies: ["LinkProtocol", .product(name: "GRDB", package: "GRDB.swift")]
        ),

        // Drives the real firmware model against a real store across process kills: the gateway child and the
        // parent that plays the devices and SIGKILLs it. Used by the crash test, crash-soak.sh and nothing else.
        .target(name: "TetherStoreSimulation", dependencies: ["TetherStore", "DeviceFirmware", "LinkProtocol"]),
        .executableTarget(name: "TetherStoreCrashTest", dependencies: ["TetherStoreSimulation"]),

        // Durable events/s with ACK-after-commit through GroupCommitter vs raw sqlite3 inserts; run in release.
        .executableTarget(
            name: "TetherStoreBench",
            dependencies: [
                "TetherStore", "LinkProtocol",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),

        // libdbus-1 as a Swift system library (a module map and a shim header of its constants).
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),

        // D-Bus for Swift on libdbus: values, private connections with one loop thread each, calls, signals, names,
        // exported objects (Properties, Introspectable, ObjectManager) and a private dbus-daemon for tests.
        .target(name: "DBus", dependencies: ["CDBus"]),

        .testTarget(name: "LinkProtocolTests", dependencies: ["LinkProtocol"]),
        .testTarget(name: "DeviceFirmwareTests", dependencies: ["DeviceFirmware", "LinkProtocol"]),
        .testTarget(name: "TetherReplayTests", dependencies: ["TetherReplay", "TetherCLI", "TetherStore", "DeviceFirmware", "LinkProtocol"]),
        .testTarget(
            name: "TetherStoreTests",
            dependencies: [
                "TetherStore", "TetherStoreSimulation", "TetherStoreCrashTest", "DeviceFirmware", "LinkProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "DBusTests", dependencies: ["DBus"]),

        // A BlueZ simulator that bleak accepts: org.bluez on a (private) bus with Adapter1, Device1, GATT objects
        // and AgentManager1 in BlueZ's signal order, each device driven by the real DeviceFirmware model, plus
        // fault injection through io.tether.Simulator1. `tether-sim` is its thin entry point.
        .target(name: "BlueZSimulator", dependencies: ["DBus", "DeviceFirmware", "LinkProtocol"], exclude: ["README.md"]),
        .executableTarget(
            name: "TetherSimCommand",
            dependencies: ["BlueZSimulator", "DBus", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "BlueZSimulatorTests", dependencies: ["BlueZSimulator", "DBus", "LinkProtocol"],
            exclude: ["bleak_client.py"]
        ),

        // Tether's BlueZ client (bluer-style, one file per interface): the org.bluez object-tree mirror, Adapter1,
        // Device1 with bounded waits, GATT characteristics (StartNotify / AcquireNotify / AcquireWrite), the Agent1
        // for pairing and every org.bluez.Error mapped in one place.
        .target(name: "BlueZ", dependencies: ["DBus"]),
        // Which device to connect next, when to retry and when to let go: a pure, deterministic state machine
        // (one connect in flight, slot budget, jittered backoff, token-bucket reconnect rate). No I/O, no clock.
        .target(name: "ConnectionSupervisor"),
        .testTarget(name: "BlueZTests", dependencies: ["BlueZ", "BlueZSimulator", "DBus", "LinkProtocol"]),
        .testTarget(name: "ConnectionSupervisorTests", dependencies: ["ConnectionSupervisor"]),
    ],
    swiftLanguageModes: [.v6]
)

// MARK: - Real BlueZ in a VM (issue 7; scripts/real-bluez.sh, deploy/real-bluez/)
package.products += [
    .executable(name: "tether-peripheral", targets: ["TetherPeripheralCommand"]),
    .executable(name: "tether-vm-central", targets: ["TetherVMCentralCommand"]),
]
package.targets += [
    // A Tether device on a real controller: the firmware model behind a GATT application and an LE advertisement
    // registered with bluetoothd (GattManager1, LEAdvertisingManager1), with a fixed-passkey agent.
    .target(
        name: "TetherPeripheral",
        dependencies: ["DBus", "DeviceFirmware", "LinkProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser")]
    ),
    .executableTarget(name: "TetherPeripheralCommand", dependencies: ["TetherPeripheral"]),
    // The VM scenario's central until tetherd can run it: BlueZ client + LinkSession + TetherStore, ACK after commit.
    .target(
        name: "TetherVMCentral",
        dependencies: [
            "BlueZ", "DBus", "LinkProtocol", "TetherStore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]
    ),
    .executableTarget(name: "TetherVMCentralCommand", dependencies: ["TetherVMCentral"]),
    .testTarget(name: "TetherPeripheralTests", dependencies: ["TetherPeripheral", "DBus", "DeviceFirmware", "LinkProtocol"]),
]
