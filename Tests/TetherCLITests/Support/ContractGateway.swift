import DBus
import Foundation
import TetherControlClient
import Synchronization
import ControlContract

/// A small in-test implementation of `io.tether.Gateway1` exactly as docs/specs/control-api.md describes it, exported
/// on a real private dbus-daemon. It is a legitimate peer for the CLI's parsing, exit codes and JSON; the
/// end-to-end behaviour of the real tetherd is tested against tetherd itself.
final class ContractGateway: Sendable {
    struct State {
        var devices: [String: [String: DBusValue]] = [:]  // by serial
        var scanResults: [[String: DBusValue]] = []
        var scanning = false
        var scanStarts = 0
        var scanStops = 0
        /// address -> (passkey for passkey devices | nil for confirmation devices, passkey shown)
        var pairable: [String: (mode: String, passkey: UInt32)] = [:]
        var settings: [String: [String: DBusValue]] = [:]  // by serial: name -> desired value
        var settingsVersion: [String: UInt64] = [:]
        var outbox: [[String: DBusValue]] = []
        var conflicts: [[String: DBusValue]] = []
        var resolved: [(serial: String, key: UInt8, keep: String)] = []
        /// When true, every mutating method fails as the bus policy would refuse it.
        var refuseMutations = false
        var syncRequests = 0
    }

    /// The state behind a reference, so handlers can share it.
    final class Shared: Sendable {
        private let mutex: Mutex<State>
        init(_ state: State) { mutex = Mutex(state) }
        func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T { try mutex.withLock { try body(&$0) } }
    }

    let connection: DBusConnection
    let state: Shared

    private init(connection: DBusConnection, state: State) {
        self.connection = connection
        self.state = Shared(state)
    }

    static func start(on bus: DBusPrivateBus, state: State = .sample) async throws -> ContractGateway {
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        let gateway = ContractGateway(connection: connection, state: state)
        try await connection.objectServer.export([gateway.interface()], at: GatewayContract.objectPath)
        _ = try await connection.requestName(GatewayContract.busName, flags: .doNotQueue)
        return gateway
    }

    func close() async {
        await connection.close()
    }

    static func failure(_ name: String, _ message: String) -> DBusError {
        DBusError(name: GatewayContract.errorPrefix + name, message: message)
    }

    private func mutating(_ body: @escaping @Sendable (DBusMethodCall) async throws -> [DBusValue]) -> DBusMethod.Handler {
        { [state] call in
            if state.withLock({ $0.refuseMutations }) {
                throw DBusError(.accessDenied, "Rejected send message, 1 matched rules; type=\"method_call\", sender=\"\(call.sender)\"")
            }
            return try await body(call)
        }
    }

    private func interface() -> DBusInterface {
        let state = self.state
        let connection = self.connection
        @Sendable func records(_ list: [[String: DBusValue]]) -> DBusValue {
            .array(elementSignature: "a{sv}", list.map { .variantDictionary($0) })
        }
        @Sendable func settingsRecord(_ serial: String, _ state: State) -> DBusValue {
            var fields: [String: DBusValue] = ["serial": .string(serial), "version": .uint64(state.settingsVersion[serial] ?? 0)]
            for (name, value) in state.settings[serial] ?? [:] {
                fields["desired.\(name)"] = value
                fields["reported.\(name)"] = value
            }
            return .variantDictionary(fields)
        }
        @Sendable func device(_ key: String, in state: State) -> [String: DBusValue]? {
            state.devices[key] ?? state.devices.values.first { $0["address"]?.stringValue == key }
        }
        return DBusInterface(
            name: GatewayContract.interface,
            methods: [
                DBusMethod("GetStatus", outputs: [DBusArgument("status", "a{sv}")]) { _ in
                    let current = state.withLock { $0 }
                    return [
                        .variantDictionary([
                            "version": .string("0.6.0-contract"), "started_at": .int64(1_795_000_000_000_000_000),
                            "bluez_available": .bool(true), "adapter": .string("hci0"), "scanning": .bool(current.scanning),
                            "devices_known": .uint32(UInt32(current.devices.count)),
                            "devices_connected": .uint32(UInt32(current.devices.values.filter { $0["state"]?.stringValue == "connected" }.count)),
                            "outbox_pending": .uint32(UInt32(current.outbox.filter { $0["status"]?.stringValue == "pending" }.count)),
                            "outbox_in_flight": .uint32(0), "outbox_failed": .uint32(0), "outbox_conflict": .uint32(0),
                            "outbox_dead": .uint32(UInt32(current.outbox.filter { $0["status"]?.stringValue == "dead" }.count)),
                            "outbox_oldest_pending_age": .int64(4_000_000_000), "conflicts": .uint32(UInt32(current.conflicts.count)),
                            "last_sync_at": .int64(1_795_000_100_000_000_000), "last_sync_result": .string("ok"),
                            "sync_clock_skew": .int64(-12_000_000), "database_bytes": .int64(1_572_864), "storage": .string("ok"),
                            "events_stored": .uint64(1234), "sqlite_heap_bytes": .int64(3_250_000),
                            "health_samples_waiting": .uint32(12), "health_samples_failed": .uint32(3), "health_samples_rejected": .uint32(1),
                            "health_deletions_waiting": .uint32(2),
                        ])
                    ]
                },
                DBusMethod("ListDevices", outputs: [DBusArgument("devices", "aa{sv}")]) { _ in
                    [records(state.withLock { $0.devices.values.sorted { $0["serial"]!.stringValue! < $1["serial"]!.stringValue! } })]
                },
                DBusMethod("GetDevice", inputs: [DBusArgument("device", "s")], outputs: [DBusArgument("device", "a{sv}")]) { call in
                    let key = call.arguments[0].stringValue ?? ""
                    guard let found = state.withLock({ device(key, in: $0) }) else {
                        throw Self.failure("UnknownDevice", "No device '\(key)'; 'tether devices' lists the known ones.")
                    }
                    return [.variantDictionary(found)]
                },
                DBusMethod("StartScan", handler: mutating { _ in
                    state.withLock { $0.scanning = true; $0.scanStarts += 1 }
                    // Results arrive as signals after the reply, as from a real radio.
                    let results = state.withLock { $0.scanResults }
                    Task {
                        for result in results {
                            try? await Task.sleep(for: .milliseconds(50))
                            try? connection.emitSignal(
                                path: GatewayContract.objectPath, interface: GatewayContract.interface, member: "ScanResult",
                                arguments: [.variantDictionary(result)])
                        }
                    }
                    return []
                }),
                DBusMethod("StopScan", handler: mutating { _ in
                    state.withLock { $0.scanning = false; $0.scanStops += 1 }
                    return []
                }),
                DBusMethod("ListScanResults", outputs: [DBusArgument("results", "aa{sv}")]) { _ in
                    [records([])]
                },
                DBusMethod(
                    "Pair", inputs: [DBusArgument("address", "s"), DBusArgument("prompt", "o")],
                    outputs: [DBusArgument("device", "a{sv}")],
                    handler: mutating { call in
                        let address = call.arguments[0].stringValue ?? ""
                        let prompt = call.arguments[1].objectPathValue ?? "/"
                        guard let entry = state.withLock({ $0.pairable[address] }) else {
                            throw Self.failure("UnknownDevice", "No device \(address) in range; run 'tether scan' first.")
                        }
                        // control-api.md: tetherd calls the prompt at the caller's unique name (the sender of Pair).
                        do {
                            switch entry.mode {
                            case "passkey":
                                let reply = try await connection.call(
                                    destination: call.sender, path: prompt, interface: GatewayContract.promptInterface,
                                    member: "RequestPasskey", arguments: [.string(address)])
                                guard reply.first?.uint32Value == entry.passkey else {
                                    throw Self.failure("PairingFailed", "Pairing \(address) failed: AuthenticationFailed (wrong passkey). Check the six digits on the device and try again.")
                                }
                            default:
                                _ = try await connection.call(
                                    destination: call.sender, path: prompt, interface: GatewayContract.promptInterface,
                                    member: "RequestConfirmation", arguments: [.string(address), .uint32(entry.passkey)])
                            }
                        } catch let error as DBusError where error.name == GatewayContract.promptRejected {
                            throw Self.failure("PairingFailed", "Pairing \(address) failed: AuthenticationRejected (the prompt said no).")
                        }
                        let serial = "TS" + address.replacingOccurrences(of: ":", with: "").suffix(8)
                        let record: [String: DBusValue] = [
                            "serial": .string(String(serial)), "address": .string(address), "name": .string("Tether-pair"),
                            "paired": .bool(true), "state": .string("connecting"),
                        ]
                        state.withLock { $0.devices[String(serial)] = record }
                        return [.variantDictionary(record)]
                    }),
                DBusMethod("Forget", inputs: [DBusArgument("device", "s")], handler: mutating { call in
                    let key = call.arguments[0].stringValue ?? ""
                    let removed = state.withLock { current -> Bool in
                        guard let found = device(key, in: current), let serial = found["serial"]?.stringValue else { return false }
                        current.devices[serial] = nil
                        return true
                    }
                    guard removed else { throw Self.failure("UnknownDevice", "No device '\(key)'; 'tether devices' lists the known ones.") }
                    return []
                }),
                DBusMethod("GetSettings", inputs: [DBusArgument("serial", "s")], outputs: [DBusArgument("settings", "a{sv}")]) { call in
                    let serial = call.arguments[0].stringValue ?? ""
                    return try state.withLock { current in
                        guard current.settings[serial] != nil else { throw Self.failure("UnknownDevice", "No device '\(serial)'.") }
                        return [settingsRecord(serial, current)]
                    }
                },
                DBusMethod(
                    "SetSettings", inputs: [DBusArgument("serial", "s"), DBusArgument("desired", "a{sv}")],
                    outputs: [DBusArgument("settings", "a{sv}")],
                    handler: mutating { call in
                        let serial = call.arguments[0].stringValue ?? ""
                        let desired = call.arguments[1].variantDictionaryValue ?? [:]
                        return try state.withLock { current in
                            guard var settings = current.settings[serial] else { throw Self.failure("UnknownDevice", "No device '\(serial)'.") }
                            for (name, value) in desired {
                                guard let present = settings[name], present.signature == value.signature else {
                                    throw Self.failure("InvalidArgument", "Setting '\(name)' does not exist or has another type.")
                                }
                                if name == "led_brightness", (value.uint32Value ?? 0) > 100 {
                                    throw Self.failure("InvalidArgument", "led_brightness must be 0-100, not \(value.uint32Value ?? 0).")
                                }
                                settings[name] = value
                            }
                            current.settings[serial] = settings
                            current.settingsVersion[serial, default: 0] += 1
                            return [settingsRecord(serial, current)]
                        }
                    }),
                DBusMethod(
                    "ListOutbox", inputs: [DBusArgument("status", "s"), DBusArgument("limit", "u")],
                    outputs: [DBusArgument("commands", "aa{sv}")]
                ) { call in
                    let status = call.arguments[0].stringValue ?? ""
                    let limit = Int(call.arguments[1].uint32Value ?? 0)
                    let list = state.withLock { $0.outbox }.filter { status.isEmpty || $0["status"]?.stringValue == status }
                    return [records(Array(list.prefix(limit)))]
                },
                DBusMethod("ListDeadLetters", inputs: [DBusArgument("limit", "u")], outputs: [DBusArgument("commands", "aa{sv}")]) { call in
                    let limit = Int(call.arguments[0].uint32Value ?? 0)
                    return [records(Array(state.withLock { $0.outbox }.filter { $0["status"]?.stringValue == "dead" }.prefix(limit)))]
                },
                DBusMethod("RetryDeadLetter", inputs: [DBusArgument("id", "s")], outputs: [DBusArgument("count", "u")], handler: mutating { call in
                    let id = call.arguments[0].stringValue ?? ""
                    let count = state.withLock { current -> UInt32 in
                        var count: UInt32 = 0
                        for index in current.outbox.indices
                        where current.outbox[index]["status"]?.stringValue == "dead" && (id == "*" || current.outbox[index]["id"]?.stringValue == id) {
                            current.outbox[index]["status"] = .string("pending")
                            current.outbox[index]["attempts"] = .uint32(0)
                            count += 1
                        }
                        return count
                    }
                    return [.uint32(count)]
                }),
                DBusMethod("DiscardDeadLetter", inputs: [DBusArgument("id", "s")], outputs: [DBusArgument("count", "u")], handler: mutating { call in
                    let id = call.arguments[0].stringValue ?? ""
                    let count = state.withLock { current -> UInt32 in
                        let before = current.outbox.count
                        current.outbox.removeAll { $0["status"]?.stringValue == "dead" && (id == "*" || $0["id"]?.stringValue == id) }
                        return UInt32(before - current.outbox.count)
                    }
                    return [.uint32(count)]
                }),
                DBusMethod("ListConflicts", outputs: [DBusArgument("conflicts", "aa{sv}")]) { _ in
                    [records(state.withLock { $0.conflicts })]
                },
                DBusMethod(
                    "ResolveConflict", inputs: [DBusArgument("serial", "s"), DBusArgument("key", "y"), DBusArgument("keep", "s")],
                    handler: mutating { call in
                        let serial = call.arguments[0].stringValue ?? ""
                        let key = call.arguments[1].byteValue ?? 0
                        let keep = call.arguments[2].stringValue ?? ""
                        guard ["mine", "theirs"].contains(keep) else { throw Self.failure("InvalidArgument", "keep must be mine or theirs") }
                        state.withLock { current in
                            current.resolved.append((serial, key, keep))
                            current.conflicts.removeAll { $0["serial"]?.stringValue == serial && $0["key"]?.byteValue == key }
                        }
                        return []
                    }),
                DBusMethod("SyncNow", handler: mutating { _ in
                    state.withLock { $0.syncRequests += 1 }
                    return []
                }),
            ],
            signals: [
                DBusSignalDeclaration("DeviceChanged", arguments: [DBusArgument("device", "a{sv}")]),
                DBusSignalDeclaration("ScanResult", arguments: [DBusArgument("result", "a{sv}")]),
                DBusSignalDeclaration("SyncFinished", arguments: [DBusArgument("result", "a{sv}")]),
            ])
    }
}

extension ContractGateway.State {
    static let deadLetterID = "0193a5c2-7d1e-7b3a-9f00-2c4d5e6f7a8b"
    static let otherDeadLetterID = "0193a5c2-7d1e-7b3a-9f00-2c4d5e6f7a8c"

    static var sample: Self {
        var state = Self()
        state.devices["TS00000001"] = [
            "serial": .string("TS00000001"), "address": .string("C0:54:45:00:00:01"), "name": .string("Tether-0001"),
            "paired": .bool(true), "state": .string("connected"), "attempts": .uint32(0), "rssi": .int16(-48),
            "firmware": .string("1.4"), "battery_percent": .byte(87), "events_stored": .uint64(120),
            "last_seen_at": .int64(1_795_000_200_000_000_000), "notify_method": .string("acquire-notify"), "mtu": .uint16(247),
        ]
        state.devices["TS00000002"] = [
            "serial": .string("TS00000002"), "address": .string("C0:54:45:00:00:02"), "name": .string("Tether-0002"),
            "paired": .bool(true), "state": .string("backoff"), "attempts": .uint32(3), "rssi": .int16(-71),
            "last_error": .string("le-connection-abort-by-local"), "events_stored": .uint64(7),
        ]
        state.scanResults = [
            ["address": .string("C0:54:45:00:00:01"), "name": .string("Tether-0001"), "rssi": .int16(-48), "known": .bool(true), "paired": .bool(true)],
            ["address": .string("C0:54:45:00:00:03"), "name": .string("Tether-0003"), "rssi": .int16(-60), "known": .bool(false), "paired": .bool(false)],
            ["address": .string("C0:54:45:00:00:03"), "name": .string("Tether-0003"), "rssi": .int16(-52), "known": .bool(false), "paired": .bool(false)],
        ]
        state.pairable = [
            "C0:54:45:00:00:03": ("passkey", 123_456),
            "C0:54:45:00:00:04": ("confirmation", 654_321),
        ]
        state.settings["TS00000001"] = [
            "led_brightness": .uint32(80), "haptic_feedback": .bool(true), "sensitivity": .uint32(3), "nickname": .string("kitchen"),
        ]
        state.outbox = [
            ["id": .string("0193a5c2-7d1e-7b3a-9f00-000000000001"), "entity": .string("consumption_event"), "kind": .string("upsert"),
             "status": .string("pending"), "attempts": .uint32(0), "created_at": .int64(1_795_000_000_000_000_000)],
            ["id": .string(deadLetterID), "entity": .string("device"), "kind": .string("upsert"), "status": .string("dead"),
             "attempts": .uint32(8), "created_at": .int64(1_795_000_000_000_000_000), "last_error": .string("422 serial too long")],
            ["id": .string(otherDeadLetterID), "entity": .string("telemetry"), "kind": .string("upsert"), "status": .string("dead"),
             "attempts": .uint32(8), "created_at": .int64(1_795_000_000_000_000_000), "last_error": .string("422 bad kind")],
        ]
        state.conflicts = [
            ["serial": .string("TS00000001"), "key": .byte(2), "name": .string("led_brightness"), "mine": .variant(.uint32(40)),
             "theirs": .variant(.uint32(90)), "base": .variant(.uint32(80)), "detected_at": .int64(1_795_000_000_000_000_000)],
        ]
        return state
    }
}
