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
        .library(name: "SyncContract", targets: ["SyncContract"]),
        .library(name: "TetherServer", targets: ["TetherServer"]),
        .library(name: "TetherSync", targets: ["TetherSync"]),
        .executable(name: "tether-server", targets: ["TetherServerCommand"]),
        .executable(name: "tether-sync-bench", targets: ["TetherSyncBench"]),
        .library(name: "BlueZSimulator", targets: ["BlueZSimulator"]),
        .executable(name: "tether-sim", targets: ["TetherSimCommand"]),
        .library(name: "BlueZ", targets: ["BlueZ"]),
        .library(name: "ConnectionSupervisor", targets: ["ConnectionSupervisor"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
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
                "TetherControlClient",
                "DBus",
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
        // parent that plays the devices and SIGKILLs it. Used by the crash test, scripts/bench/crash-soak.sh and nothing else.
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

        // Sync (docs/sync-api.yaml). The wire types shared by the reference server and the gateway: request and
        // response bodies, problem+json, the opaque cursor and the page checksum. No I/O.
        .target(
            name: "SyncContract",
            dependencies: ["LinkProtocol", .product(name: "Crypto", package: "swift-crypto")]
        ),

        // The reference sync backend: Hummingbird routes, bearer-token auth (tokens stored hashed), tenant
        // isolation, idempotent batch apply, the change feed, limits, and SQLite (GRDB) or PostgreSQL storage.
        .target(
            name: "TetherServer",
            dependencies: [
                "SyncContract", "LinkProtocol",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `tether-server serve | token create | settings set | device delete`: a thin entry point.
        .executableTarget(
            name: "TetherServerCommand",
            dependencies: ["TetherServer", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        // The gateway's sync engine: a Service that pushes the outbox, pulls the change feed, applies it through
        // TetherStore, gates cursors on integrity checks, and retries with backoff. HTTP via AsyncHTTPClient.
        .target(
            name: "TetherSync",
            dependencies: [
                "SyncContract", "TetherStore", "LinkProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // Test and benchmark support for sync: a throwaway PostgreSQL cluster from Debian's binaries and an
        // in-process server on a loopback port. Used by the sync tests and tether-sync-bench, never shipped.
        .target(
            name: "TetherSyncTesting",
            dependencies: [
                "TetherServer", "SyncContract", "TetherStore", "LinkProtocol",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Drains queued commands to the reference server on loopback (SQLite and PostgreSQL) and measures the
        // server's ingest with concurrent gateways; run in release.
        .executableTarget(
            name: "TetherSyncBench",
            dependencies: [
                "TetherSync", "TetherServer", "TetherSyncTesting", "TetherStore", "SyncContract", "LinkProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "TetherServerTests",
            dependencies: [
                "TetherServer", "SyncContract", "TetherSyncTesting", "LinkProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "TetherSyncTests",
            dependencies: [
                "TetherSync", "TetherServer", "TetherServerCommand", "TetherSyncTesting", "TetherStore", "SyncContract",
                "LinkProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

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

// MARK: - Real BlueZ in a VM (issue 7; scripts/vm/real-bluez.sh, deploy/real-bluez/)
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

// ---- gateway branch (issue 4): the BlueZ gateway service, its shared simulator harness, tests and benchmark ----
package.products += [
    .library(name: "TetherGateway", targets: ["TetherGateway"]),
    .executable(name: "tether-gateway-bench", targets: ["TetherGatewayBench"]),
]
package.targets += [
    // The gateway's BlueZ side: SupervisorDriver (the supervisor's I/O edge), DeviceSession (notifications →
    // LinkSession → GroupCommitter, ACK after commit), and the Gateway façade tetherd runs (snapshots, changes,
    // scan, pair through Agent1, forget, graceful shutdown).
    .target(
        name: "TetherGateway",
        dependencies: ["BlueZ", "ConnectionSupervisor", "LinkProtocol", "TetherStore", "DBus"]
    ),
    // A private dbus-daemon with tether-sim on it and a client connection: the harness gateway tests and the
    // benchmark share (test support, never linked into tetherd).
    .target(name: "BlueZTestSupport", dependencies: ["BlueZSimulator", "BlueZ", "DBus"]),
    .testTarget(
        name: "TetherGatewayTests",
        dependencies: [
            "TetherGateway", "BlueZTestSupport", "BlueZSimulator", "BlueZ", "DBus", "TetherStore", "LinkProtocol",
            "ConnectionSupervisor",
        ]
    ),
    // Notifications/s and CPU per notification from N simulated devices (tether-sim as a child process):
    // Tether over StartNotify and AcquireNotify vs bleak, same stream, same run. Run in release
    // (scripts/bench/gateway-bench.sh).
    .target(name: "GatewayBenchmark", dependencies: ["TetherGateway", "BlueZ", "DBus", "LinkProtocol"]),
    .executableTarget(name: "TetherGatewayBench", dependencies: ["GatewayBenchmark"]),
]

// The simulator-start harness the older BlueZ suites duplicated now comes from BlueZTestSupport.
for target in package.targets where ["BlueZTests", "BlueZSimulatorTests"].contains(target.name) {
    target.dependencies.append("BlueZTestSupport")
}

// MARK: - tetherd (issue 6, daemon half)
// Kept as one appended block so merges with the other branches' Package.swift changes stay mechanical.

package.products += [
    .library(name: "TetherDaemon", targets: ["TetherDaemon"]),
    .executable(name: "tetherd", targets: ["TetherDaemonCommand"]),
]
package.dependencies += [
    .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    // swift-log, swift-service-lifecycle and hummingbird come from the sync block above.
]
package.targets += [
    // tetherd as a library: the TOML configuration and its checks, the ServiceGroup (store services, device
    // sessions, sync, control API, metrics), systemd's notify protocol, logging, and the io.tether.Gateway1
    // control API on D-Bus (docs/control-api.md).
    .target(
        name: "TetherDaemon",
        dependencies: [
            "DBus", "TetherStore", "LinkProtocol", "TetherGateway", "TetherSync",
            .product(name: "TOMLKit", package: "TOMLKit"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]
    ),
    .executableTarget(name: "TetherDaemonCommand", dependencies: ["TetherDaemon"]),
    .testTarget(
        name: "TetherDaemonTests",
        dependencies: [
            "TetherDaemon", "DBus", "TetherStore", "LinkProtocol", "BlueZSimulator", "TetherSyncTesting", "TetherServer",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]
    ),
]

// MARK: - CLI (issue 6, branch `cli`): the control-API client and the CLI's tests.
package.products += [.library(name: "TetherControlClient", targets: ["TetherControlClient"])]
package.targets += [
    // A client of tetherd's control API (docs/control-api.md): io.tether.Gateway1 calls, records, the D-Bus error
    // names mapped in one place, and the io.tether.PairingPrompt1 object a caller exports while pairing.
    .target(name: "TetherControlClient", dependencies: ["DBus"]),
    // The tether CLI's parsing, help snapshots, the built `tether` against an in-test io.tether.Gateway1 on a private
    // bus, and end to end against the built tetherd with the BlueZ simulator and tether-server.
    .testTarget(
        name: "TetherCLITests",
        dependencies: [
            "TetherCLI", "TetherControlClient", "DBus", "BlueZSimulator",
            .product(name: "GRDB", package: "GRDB.swift"),
            // Built so the tests can run them: the CLI, and the real daemon and backend for the end-to-end tests.
            "TetherCommand", "TetherDaemonCommand", "TetherServerCommand",
        ],
        exclude: ["HelpSnapshots"]
    ),
]
