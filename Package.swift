// swift-tools-version: 6.1
// Tether: an edge gateway for BLE consumption devices and health telemetry.
//
// One declaration, read top to bottom as the architecture, each layer depending only on the layers above it:
//   1. Core        Sources/Core        sans-I/O cores: bytes, time and randomness; the link protocol; the connection
//                                      supervisor; the sync contract. No sockets, no database, no clock inside.
//   2. Bus         Sources/Bus         D-Bus (libdbus and a wire-protocol client) and the BlueZ client on it.
//   3. Gateway     Sources/Gateway     the store, the BlueZ gateway and its device sessions, sync, tetherd, its
//                                      control API, and the technician CLI.
//   4. Backend     Sources/Backend     the reference sync server.
//   5. Simulation  Sources/Simulation  the device model, tether-sim, the VM's peripheral, the crash-test driver.
//   6. Executables Sources/Executables one thin Entrypoint.swift each, in a folder named for the binary.
//   7. Tests       Tests/              one test target per module, and the test support they share (Tests/Support).
// Benchmarks live in the Benchmarks/ package and fuzz targets in the Fuzz/ package, so that `swift build` and
// `swift test` here never build ordo-one/benchmark or the sanitizers.

import PackageDescription

// MARK: - Dependencies

let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")
let grdb = Target.Dependency.product(name: "GRDB", package: "GRDB.swift")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let serviceLifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let crypto = Target.Dependency.product(name: "Crypto", package: "swift-crypto")
let hummingbird = Target.Dependency.product(name: "Hummingbird", package: "hummingbird")
let postgres = Target.Dependency.product(name: "PostgresNIO", package: "postgres-nio")
let httpClient = Target.Dependency.product(name: "AsyncHTTPClient", package: "async-http-client")
let nioCore = Target.Dependency.product(name: "NIOCore", package: "swift-nio")
let nioSSL = Target.Dependency.product(name: "NIOSSL", package: "swift-nio-ssl")

// MARK: - 1. Core: sans-I/O, deterministic, no I/O of their own

let core: [Target] = [
    // Bytes (a bounds-checked reader and a writer, either byte order), time (`Timestamp`, the wall clock that the
    // edges read) and seeded randomness: the primitives every other module shares, each defined once.
    .target(name: "TetherPrimitives", path: "Sources/Core/TetherPrimitives"),

    // The device settings of link protocol §7.11 as values (keys, ranges, TLV records): shared by the link protocol,
    // the store and the sync contract, so that the backend validates settings without the link protocol.
    .target(name: "TetherSettings", path: "Sources/Core/TetherSettings"),

    // The device link protocol (docs/specs/link-protocol.md): frame codec, reassembly, the gateway's session state machine
    // and the device-clock model. Facts in, orders out; time comes with every input.
    .target(
        name: "LinkProtocol",
        dependencies: ["TetherSettings", "TetherPrimitives"],
        path: "Sources/Core/LinkProtocol",
        // BootClock's rounding calls libm; release builds inline it, debug builds of executables must link it.
        linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]
    ),

    // Which device to connect next, when to retry and when to let go: a pure state machine (one connect in flight,
    // slot budget, jittered backoff, token-bucket reconnect rate).
    .target(name: "ConnectionSupervisor", dependencies: ["TetherPrimitives"], path: "Sources/Core/ConnectionSupervisor"),

    // The sync wire types shared by the reference server and the gateway (docs/specs/sync-api.yaml): request and response
    // bodies, problem+json, the opaque cursor and the page checksum.
    .target(
        name: "SyncContract",
        dependencies: ["TetherSettings", "TetherPrimitives", crypto],
        path: "Sources/Core/SyncContract"
    ),

    // Standard Bluetooth SIG health profiles, pure: the characteristics' wire forms (IEEE-11073 SFLOAT/FLOAT with
    // their special values, units as reported and in UCUM), the RACP client and the device-time derivation.
    .target(name: "HealthProfiles", dependencies: ["TetherPrimitives"], path: "Sources/Core/HealthProfiles"),

    // A small hand-written CBOR codec (RFC 8949; the package mirror has none): definite and indefinite lengths,
    // limits on depth, items and size, preferred serialization. README.md says why.
    .target(name: "CBOR", path: "Sources/Core/CBOR", exclude: ["README.md"]),

    // MCUmgr SMP, sans-I/O: the 8-byte header (v1, v2), OS and image group messages, both error forms, response
    // reassembly, the client core (sequences, time-outs, retries) and the windowed, resumable image uploader.
    .target(name: "SMP", dependencies: ["CBOR", "TetherPrimitives"], path: "Sources/Core/SMP"),
    // MCUboot images, pure: header, protected and unprotected TLVs, the SHA-256 and the Ed25519 / ECDSA P-256
    // signature checked against trusted public keys, and a named reason for every image refused. docs/design/firmware-images.md.
    .target(name: "MCUbootImage", dependencies: ["TetherPrimitives", crypto], path: "Sources/Core/MCUbootImage"),
]

// MARK: - 2. Bus: D-Bus and BlueZ

let bus: [Target] = [
    // libdbus-1 as a Swift system library (a module map and a shim header of its constants).
    .systemLibrary(name: "CDBus", path: "Sources/Bus/CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),

    // D-Bus for Swift: libdbus connections with one loop thread each (calls, signals, names, exported objects) and a
    // wire-protocol client for high-rate signal streams; a private dbus-daemon for tests. docs/design/dbus.md.
    .target(name: "DBus", dependencies: ["CDBus"], path: "Sources/Bus/DBus"),

    // Tether's BlueZ client (bluer-style, one file per interface): the object-tree mirror, Adapter1, Device1, GATT
    // characteristics (StartNotify / AcquireNotify / AcquireWrite), Agent1, every org.bluez.Error mapped in one place.
    // docs/design/bluez.md.
    .target(name: "BlueZ", dependencies: ["DBus"], path: "Sources/Bus/BlueZ"),
]

// MARK: - 3. Gateway: store, sessions, sync, daemon, control API, CLI

let gateway: [Target] = [
    // The local-first store: one GatewayDatabase owning a WAL DatabasePool (synchronous=FULL), migrations, the
    // consumption and device-settings services, the outbox, group commit with ACK-after-commit, storage limits.
    .target(name: "TetherStore", dependencies: ["LinkProtocol", "TetherSettings", "TetherPrimitives", grdb, .product(name: "GRDBSQLite", package: "GRDB.swift")], path: "Sources/Gateway/TetherStore"),

    // The gateway's BlueZ side: SupervisorDriver (the supervisor's I/O edge), device sessions (notifications →
    // LinkSession → group commit, ACK after commit), and the Gateway façade tetherd runs.
    .target(
        name: "TetherGateway",
        dependencies: ["BlueZ", "ConnectionSupervisor", "LinkProtocol", "HealthProfiles", "TetherSettings", "TetherPrimitives", "TetherStore", "DBus"],
        path: "Sources/Gateway/TetherGateway"
    ),

    // The sync engine: a Service that pushes the outbox, pulls the change feed, applies it through TetherStore,
    // gates cursors on integrity checks and retries with backoff (AsyncHTTPClient).
    .target(
        name: "TetherSync",
        dependencies: [
            "SyncContract", "TetherStore", "LinkProtocol", "TetherSettings", "TetherPrimitives",
            httpClient, nioSSL, nioCore, .product(name: "NIOHTTP1", package: "swift-nio"), logging, serviceLifecycle,
        ],
        path: "Sources/Gateway/TetherSync"
    ),

    // tetherd as a library: TOML configuration, the ServiceGroup, systemd notify, logging, metrics, and the
    // io.tether.Gateway1 control API on D-Bus (docs/specs/control-api.md).
    .target(
        name: "TetherDaemon",
        dependencies: [
            "ControlContract", "DBus", "TetherStore", "LinkProtocol", "TetherSettings", "TetherPrimitives", "TetherGateway", "TetherSync", "HealthProfiles",
            "TetherFirmware", "MCUbootImage", "SMP", crypto,
            .product(name: "TOMLKit", package: "TOMLKit"), logging,
            .product(name: "Metrics", package: "swift-metrics"), .product(name: "Prometheus", package: "swift-prometheus"),
            serviceLifecycle, .product(name: "UnixSignals", package: "swift-service-lifecycle"), hummingbird, argumentParser,
        ],
        path: "Sources/Gateway/TetherDaemon"
    ),

    // The control API's names (docs/specs/control-api.md): bus name, object path, interfaces, methods, signals and error
    // names, shared by tetherd and its clients as SyncContract is for sync. Nothing else spells them.
    .target(name: "ControlContract", dependencies: ["DBus"], path: "Sources/Gateway/ControlContract"),

    // A client of tetherd's control API: io.tether.Gateway1 calls, records, D-Bus errors mapped in one place, and the
    // io.tether.PairingPrompt1 object a caller exports while pairing.
    .target(name: "TetherControlClient", dependencies: ["ControlContract", "DBus"], path: "Sources/Gateway/TetherControlClient"),

    // Firmware transcripts: the text format, the replayer that drives them through a real gateway session, and
    // the outcome it reports. The link core only: the CLI that links it carries no device model.
    .target(
        name: "TetherReplay", dependencies: ["LinkProtocol", "TetherSettings", "TetherPrimitives"],
        path: "Sources/Gateway/TetherReplay"
    ),

    // The technician CLI's command tree. It reaches tetherd through TetherControlClient; only `replay` links the
    // link core (TetherReplay), only `health decode` the health parsers (HealthProfiles), and only
    // `outbox`/`dead-letters` and `replay --db` open the database (TetherStore).
    .target(
        name: "TetherCLI",
        dependencies: ["TetherReplay", "TetherStore", "HealthProfiles", "MCUbootImage", "TetherFirmware", "SMP", "ControlContract", "TetherControlClient", "DBus", argumentParser],
        path: "Sources/Gateway/TetherCLI"
    ),

    // Firmware updates: the SMP client core's I/O edges, over UDP (Zephyr's UDP transport, one SMP message per datagram,
    // port 1337; `tether firmware ... --udp HOST:PORT`) and over BLE (the SMP GATT characteristic through BlueZ), and
    // the update procedure both carry out. docs/design/firmware-udp.md, docs/design/firmware-ble.md.
    .target(
        name: "TetherFirmware", dependencies: ["SMP", "MCUbootImage", "CBOR", "TetherPrimitives", "BlueZ", "DBus", crypto], path: "Sources/Gateway/TetherFirmware"
    ),
]

// MARK: - 4. Backend: the reference sync server

let backend: [Target] = [
    // Hummingbird routes, bearer-token auth (tokens stored hashed), tenant isolation, idempotent batch apply, the
    // change feed, limits, and SQLite (GRDB) or PostgreSQL storage.
    .target(
        name: "TetherServer",
        dependencies: [
            "SyncContract", "TetherSettings", "TetherPrimitives",
            hummingbird, .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            grdb, postgres, crypto, logging, serviceLifecycle, nioSSL, argumentParser,
        ],
        path: "Sources/Backend/TetherServer"
    ),
]

// MARK: - 5. Simulation: devices and harnesses that stand in for the world (never linked into tetherd)

let simulation: [Target] = [
    // The device side of the link protocol (a firmware model on the same codec) and LinkPair, which joins it to a
    // gateway session under a manual clock with fault injection.
    .target(name: "TetherDeviceModel", dependencies: ["LinkProtocol", "TetherSettings", "TetherPrimitives"], path: "Sources/Simulation/TetherDeviceModel"),

    // A BlueZ simulator that bleak accepts: org.bluez on a private bus in BlueZ's signal order, each device driven by
    // the device model, plus fault injection through io.tether.Simulator1.
    .target(
        name: "BlueZSimulator",
        dependencies: ["DBus", "TetherDeviceModel", "HealthDeviceModel", "SMPDeviceModel", "SMP", "LinkProtocol", "TetherSettings", "TetherPrimitives"],
        path: "Sources/Simulation/BlueZSimulator", exclude: ["README.md"]
    ),

    // A Tether device on a real controller (the real-BlueZ VM scenario): the device model behind a GATT
    // application and an LE advertisement registered with bluetoothd, with a fixed-passkey agent.
    .target(
        name: "TetherPeripheral",
        dependencies: ["DBus", "TetherDeviceModel", "LinkProtocol", "TetherSettings", "TetherPrimitives", "SMP", "SMPDeviceModel", argumentParser],
        path: "Sources/Simulation/TetherPeripheral"
    ),

    // The scenarios that recorded Firmware-fixtures/: the device model through LinkPair, written as transcripts
    // with their expected outcomes and checked against the replay before they are written (tether-fixtures).
    .target(
        name: "TetherFixtures", dependencies: ["TetherReplay", "TetherDeviceModel", "LinkProtocol", "TetherSettings", "TetherPrimitives"],
        path: "Sources/Simulation/TetherFixtures"
    ),

    // Drives the device model against a real store across process kills: the gateway child and the parent that plays
    // the devices and SIGKILLs it (the crash test and scripts' crash soak).
    .target(
        name: "TetherStoreSimulation", dependencies: ["TetherStore", "TetherDeviceModel", "LinkProtocol", "TetherSettings", "TetherPrimitives"],
        path: "Sources/Simulation/TetherStoreSimulation"
    ),

    // Standard Bluetooth SIG health devices, pure and seeded: their characteristics encoded from the SIG specifications
    // (independently of HealthProfiles, which it must never import), a RACP server, device clocks, users and faults.
    .target(name: "HealthDeviceModel", dependencies: ["TetherPrimitives"], path: "Sources/Simulation/HealthDeviceModel"),

    // A simulated MCUmgr device, pure: an SMP server with MCUboot's two slots (echo, parameters, image state, upload with
    // resume, erase, reset with the test/confirm/revert swap), errors in the request's SMP version. docs/design/firmware-udp.md.
    .target(name: "SMPDeviceModel", dependencies: ["SMP", "CBOR", "TetherPrimitives", crypto], path: "Sources/Simulation/SMPDeviceModel"),

    // The simulated MCUmgr device served over UDP as Zephyr's UDP transport does (tether-smp-device, and the tests).
    .target(
        name: "SMPUDPDevice", dependencies: ["SMPDeviceModel", "TetherFirmware", argumentParser], path: "Sources/Simulation/SMPUDPDevice"
    ),
]

// MARK: - 6. Executables: one thin Entrypoint.swift each

let executables: [Target] = [
    .executableTarget(name: "TetherCommand", dependencies: ["TetherCLI"], path: "Sources/Executables/tether"),
    .executableTarget(name: "TetherDaemonCommand", dependencies: ["TetherDaemon"], path: "Sources/Executables/tetherd"),
    .executableTarget(
        name: "TetherServerCommand", dependencies: ["TetherServer", argumentParser], path: "Sources/Executables/tether-server"
    ),
    .executableTarget(
        name: "TetherSimCommand", dependencies: ["BlueZSimulator", "DBus", argumentParser], path: "Sources/Executables/tether-sim"
    ),
    .executableTarget(
        name: "TetherPeripheralCommand", dependencies: ["TetherPeripheral"], path: "Sources/Executables/tether-peripheral"
    ),
    // Regenerates Firmware-fixtures/ from the device model. Run by developers, never by CI.
    .executableTarget(
        name: "TetherFixturesCommand", dependencies: ["TetherFixtures", argumentParser], path: "Sources/Executables/tether-fixtures"
    ),
    .executableTarget(
        name: "TetherStoreCrashTest", dependencies: ["TetherStoreSimulation"], path: "Sources/Executables/tether-store-crashtest"
    ),
    // The simulated MCUmgr device on a UDP port (SMPUDPDevice): what `tether firmware --udp` and smpmgr talk to in tests.
    .executableTarget(name: "TetherSMPDeviceCommand", dependencies: ["SMPUDPDevice"], path: "Sources/Executables/tether-smp-device"),
]

// MARK: - 7. Tests and the support they share

let testSupport: [Target] = [
    // What every suite shares: child processes started as a shell would (empty signal mask, descriptors 0-2 only),
    // the built products beside the test bundle, a manual clock and bounded waits. Foundation only, so that the
    // benchmarks may link it.
    .target(name: "TetherTestSupport", path: "Tests/Support/TetherTestSupport"),
    // A private dbus-daemon with tether-sim on it and a client connection (gateway, BlueZ and simulator suites).
    .target(
        name: "BlueZTestSupport", dependencies: ["BlueZSimulator", "BlueZ", "DBus", "TetherTestSupport"], path: "Tests/Support/BlueZTestSupport"
    ),
    // A throwaway PostgreSQL cluster from Debian's binaries and an in-process server on a loopback port (sync,
    // server and daemon suites; the sync benchmark).
    .target(
        name: "TetherSyncTesting",
        dependencies: [
            "TetherServer", "SyncContract", "TetherStore", "LinkProtocol", "TetherSettings", "TetherPrimitives", "TetherTestSupport",
            postgres, hummingbird, logging, serviceLifecycle,
        ],
        path: "Tests/Support/TetherSyncTesting"
    ),
]

let tests: [Target] = [
    .testTarget(name: "TetherTestSupportTests", dependencies: ["TetherTestSupport"]),
    .testTarget(name: "TetherPrimitivesTests", dependencies: ["TetherPrimitives"]),
    .testTarget(name: "LinkProtocolTests", dependencies: ["LinkProtocol", "TetherSettings", "TetherPrimitives"]),
    .testTarget(name: "HealthProfilesTests", dependencies: ["HealthProfiles", "TetherPrimitives"]),
    .testTarget(name: "ConnectionSupervisorTests", dependencies: ["ConnectionSupervisor", "TetherPrimitives"]),
    .testTarget(name: "TetherDeviceModelTests", dependencies: ["TetherDeviceModel", "LinkProtocol", "TetherSettings", "TetherPrimitives"]),
    .testTarget(
        name: "TetherReplayTests",
        dependencies: [
            "TetherReplay", "TetherCLI", "TetherStore", "TetherDeviceModel", "LinkProtocol", "TetherSettings", "TetherPrimitives",
            "TetherTestSupport",
        ]
    ),
    .testTarget(
        name: "TetherStoreTests",
        dependencies: [
            "TetherStore", "TetherStoreSimulation", "TetherStoreCrashTest", "TetherDeviceModel", "LinkProtocol", "TetherSettings",
            "TetherPrimitives", "TetherTestSupport", "SyncContract", grdb,
        ]
    ),
    .testTarget(name: "DBusTests", dependencies: ["DBus", "TetherTestSupport"]),
    .testTarget(
        name: "BlueZTests",
        dependencies: ["BlueZ", "BlueZSimulator", "BlueZTestSupport", "DBus", "LinkProtocol", "TetherSettings", "TetherPrimitives", "TetherTestSupport"]
    ),
    .testTarget(
        name: "BlueZSimulatorTests",
        dependencies: [
            "BlueZSimulator", "BlueZTestSupport", "DBus", "LinkProtocol", "TetherSettings", "TetherPrimitives", "TetherTestSupport",
            "SMPDeviceModel", crypto,
        ],
        exclude: ["bleak_client.py", "bleak_health_client.py", "health-devices.json", "smpclient_ble.py"]
    ),
    .testTarget(
        name: "TetherPeripheralTests",
        dependencies: ["TetherPeripheral", "DBus", "TetherDeviceModel", "LinkProtocol", "TetherSettings", "TetherPrimitives", "SMPDeviceModel", "CBOR", "SMP"]
    ),
    .testTarget(
        name: "TetherGatewayTests",
        dependencies: [
            "TetherGateway", "BlueZTestSupport", "BlueZSimulator", "BlueZ", "DBus", "TetherStore", "LinkProtocol", "TetherSettings",
            "ConnectionSupervisor", "TetherDeviceModel", "TetherPrimitives", "TetherTestSupport", "HealthProfiles", "HealthDeviceModel",
            // FirmwareUpdateRunnerTests: tetherd's update through this target's GatewayHarness.
            "TetherDaemon", "TetherFirmware", "MCUbootImage", "SMPDeviceModel",
        ]
    ),
    .testTarget(
        name: "TetherServerTests",
        dependencies: [
            "TetherServer", "SyncContract", "TetherSyncTesting", "TetherTestSupport", "LinkProtocol", "TetherSettings", "TetherPrimitives",
            // TetherStore only for HealthVocabularyTests: the server accepts the words the gateway stores.
            "TetherStore", grdb, httpClient, nioCore, nioSSL,
        ],
        // The FHIR export's oracle (fhir.resources), run by FHIRExportValidationTests.
        exclude: ["fhir_validate.py"]
    ),
    .testTarget(
        name: "TetherSyncTests",
        dependencies: [
            "TetherSync", "TetherServer", "TetherServerCommand", "TetherSyncTesting", "TetherTestSupport", "TetherStore", "SyncContract",
            "LinkProtocol", "TetherSettings", "TetherPrimitives", httpClient, hummingbird, nioCore, logging, serviceLifecycle,
        ]
    ),
    .testTarget(
        name: "TetherDaemonTests",
        dependencies: [
            "TetherDaemon", "DBus", "TetherStore", "LinkProtocol", "TetherSettings", "TetherPrimitives", "BlueZSimulator",
            "TetherSyncTesting", "TetherServer", "TetherTestSupport", "HealthDeviceModel", grdb,
        ]
    ),
    // The CLI's parsing and help snapshots, the built `tether` against an in-test io.tether.Gateway1, and end to end
    // against the built tetherd with the BlueZ simulator and tether-server (built so the tests can run them).
    .testTarget(
        name: "TetherCLITests",
        dependencies: [
            "TetherCLI", "HealthProfiles", "ControlContract", "TetherControlClient", "DBus", "BlueZSimulator", "HealthDeviceModel", grdb,
            "TetherCommand", "TetherDaemonCommand", "TetherServerCommand", "TetherTestSupport",
        ],
        exclude: ["HelpSnapshots"]
    ),
    // The health device encoders against golden vectors from the specifications, the RACP server, faults, seeding, and
    // the devices' ATT values in a btsnoop file decoded by Wireshark's tshark.
    .testTarget(name: "HealthDeviceModelTests", dependencies: ["HealthDeviceModel", "TetherPrimitives", "TetherTestSupport"]),
    .testTarget(name: "CBORTests", dependencies: ["CBOR"]),
    // SMP's codec, client core and uploader (an in-test device model), and a cross-check against PyPI's `smp`.
    .testTarget(
        name: "SMPTests", dependencies: ["SMP", "CBOR", "TetherPrimitives", "TetherTestSupport", crypto], exclude: ["smp_crosscheck.py"]
    ),
    // imgtool's images (committed fixtures and freshly signed ones), tampered copies, and imgtool verify as the oracle.
    .testTarget(
        name: "MCUbootImageTests", dependencies: ["MCUbootImage", "TetherPrimitives", "TetherTestSupport", crypto],
        exclude: ["Fixtures", "make-images.sh"]
    ),
    // The simulated MCUmgr device: MCUboot's slot states and swaps, upload and resume, both error forms, and
    // smpclient/smpmgr (PyPI) driving it over UDP.
    .testTarget(
        name: "SMPDeviceModelTests",
        dependencies: ["SMPDeviceModel", "SMPUDPDevice", "TetherFirmware", "SMP", "CBOR", "TetherTestSupport", crypto],
        exclude: ["smpclient_udp.py"]
    ),
    // Tether's SMP UDP transport and the `tether firmware --udp` commands against the simulated device on real sockets;
    // the SMP BLE transport against tether-sim's SMP device on a private dbus-daemon.
    .testTarget(
        name: "TetherFirmwareTests",
        dependencies: [
            "TetherFirmware", "SMPUDPDevice", "SMPDeviceModel", "SMP", "MCUbootImage", "TetherTestSupport", "TetherCommand", "BlueZ",
            "BlueZSimulator", "BlueZTestSupport", "DBus", crypto,
        ]
    ),
]

let package = Package(
    name: "Tether",
    platforms: [.macOS(.v14)],
    products: [
        // Executables that ship (deploy/) and that tests and scripts run.
        .executable(name: "tether", targets: ["TetherCommand"]),
        .executable(name: "tetherd", targets: ["TetherDaemonCommand"]),
        .executable(name: "tether-server", targets: ["TetherServerCommand"]),
        .executable(name: "tether-sim", targets: ["TetherSimCommand"]),
        .executable(name: "tether-peripheral", targets: ["TetherPeripheralCommand"]),
        .executable(name: "tether-fixtures", targets: ["TetherFixturesCommand"]),
        .executable(name: "tether-store-crashtest", targets: ["TetherStoreCrashTest"]),
        .executable(name: "tether-smp-device", targets: ["TetherSMPDeviceCommand"]),
        // Libraries the Benchmarks/ and Fuzz/ packages build on.
        .library(name: "TetherPrimitives", targets: ["TetherPrimitives"]),
        .library(name: "TetherSettings", targets: ["TetherSettings"]),
        .library(name: "LinkProtocol", targets: ["LinkProtocol"]),
        .library(name: "ConnectionSupervisor", targets: ["ConnectionSupervisor"]),
        .library(name: "SyncContract", targets: ["SyncContract"]),
        .library(name: "HealthProfiles", targets: ["HealthProfiles"]),
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "BlueZ", targets: ["BlueZ"]),
        .library(name: "TetherStore", targets: ["TetherStore"]),
        .library(name: "TetherGateway", targets: ["TetherGateway"]),
        .library(name: "TetherSync", targets: ["TetherSync"]),
        .library(name: "TetherDaemon", targets: ["TetherDaemon"]),
        .library(name: "ControlContract", targets: ["ControlContract"]),
        .library(name: "TetherControlClient", targets: ["TetherControlClient"]),
        .library(name: "TetherReplay", targets: ["TetherReplay"]),
        .library(name: "TetherServer", targets: ["TetherServer"]),
        .library(name: "TetherDeviceModel", targets: ["TetherDeviceModel"]),
        .library(name: "BlueZSimulator", targets: ["BlueZSimulator"]),
        .library(name: "TetherSyncTesting", targets: ["TetherSyncTesting"]),
        .library(name: "CBOR", targets: ["CBOR"]),
        .library(name: "SMP", targets: ["SMP"]),
        .library(name: "MCUbootImage", targets: ["MCUbootImage"]),
        .library(name: "TetherFirmware", targets: ["TetherFirmware"]),
        .library(name: "SMPDeviceModel", targets: ["SMPDeviceModel"]),
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
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: core + bus + gateway + backend + simulation + executables + testSupport + tests,
    swiftLanguageModes: [.v6]
)
