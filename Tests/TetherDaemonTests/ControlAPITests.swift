import BlueZSimulator
import DBus
import Foundation
import LinkProtocol
import Synchronization
import Testing
import TetherStore
import TetherPrimitives
import TetherSettings
import TetherTestSupport

/// io.tether.Gateway1 on a private bus, served by a real tetherd process whose devices are tether-sim's.
@Suite(.serialized) struct ControlAPITests {
    func expectError(_ name: String, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected io.tether.Gateway1.Error.\(name)")
        } catch let error as DBusError {
            #expect(error.name == "io.tether.Gateway1.Error.\(name)", "\(error)")
            #expect(!error.message.isEmpty)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func statusOfAFreshDaemon() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            try await bed.startDaemon()
            let status = try await bed.client.status()
            #expect(status["version"]?.stringValue?.isEmpty == false)
            #expect(status["adapter"]?.stringValue == "hci0")
            #expect(status["devices_known"]?.uint32Value == 0)
            #expect(status["outbox_pending"]?.uint32Value == 0)
            #expect(status["outbox_dead"]?.uint32Value == 0)
            #expect(status["last_sync_result"]?.stringValue == "never")
            #expect(status["storage"]?.stringValue == "ok")
            #expect((status["database_bytes"]?.int64Value ?? 0) > 0)
            // Debian's SQLite keeps memory statistics: the daemon's open database holds some of its heap.
            #expect((status["sqlite_heap_bytes"]?.int64Value ?? 0) > 0)
            #expect((status["sqlite_heap_highwater_bytes"]?.int64Value ?? 0) >= (status["sqlite_heap_bytes"]?.int64Value ?? 0))
            #expect(status["health_samples_waiting"]?.uint32Value == 0)
            #expect(status["health_samples_rejected"]?.uint32Value == 0)
            #expect(status["health_deletions_waiting"]?.uint32Value == 0)
            #expect(status["outbox_oldest_pending_age"] == nil)  // no value: left out
            try await waitUntil("BlueZ seen by the gateway", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                try await bed.client.status()["bluez_available"]?.boolValue == true
            }
            try await bed.stopDaemon()
        }
    }

    @Test func pairConnectsAndTheSettingsRoundTrip() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            try await bed.startDaemon()
            let paired = try await bed.pair(DaemonTestBed.justWorks)
            #expect(paired["address"]?.stringValue == DaemonTestBed.justWorks)
            #expect(paired["paired"]?.boolValue == true)
            try await bed.waitUntilConnected(["TS00000001"])

            // The device reports its configuration on connect (GET_CONFIG → CONFIG_DATA).
            try await waitUntil("reported settings", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                try await bed.client.record("GetSettings", [.string("TS00000001")])["reported.sensitivity"] != nil
            }
            let before = try await bed.client.record("GetSettings", [.string("TS00000001")])
            let newSensitivity: UInt32 = before["reported.sensitivity"]?.uint32Value == 7 ? 8 : 7

            let changed = try await bed.client.record(
                "SetSettings", [.string("TS00000001"), .variantDictionary(["sensitivity": .uint32(newSensitivity), "haptic_feedback": .bool(false)])])
            #expect(changed["desired.sensitivity"]?.uint32Value == newSensitivity)
            #expect(changed["desired.haptic_feedback"]?.boolValue == false)

            // The connected device receives SET_CONFIG and reports the desired version back.
            try await waitUntil("the device to confirm the settings", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                let settings = try await bed.client.record("GetSettings", [.string("TS00000001")])
                return settings["confirmed"]?.boolValue == true && settings["reported.sensitivity"]?.uint32Value == newSensitivity
                    && settings["reported.haptic_feedback"]?.boolValue == false
            }

            // The store queued the change for the backend.
            let outbox = try await bed.client.records("ListOutbox", [.string(""), .uint32(0)])
            #expect(outbox.contains { $0["kind"]?.stringValue?.hasPrefix("deviceSettings.") == true && $0["entity"]?.stringValue == "TS00000001" })

            await expectError("InvalidArgument") {
                _ = try await bed.client.call("SetSettings", [.string("TS00000001"), .variantDictionary(["sensitivity": .uint32(11)])])
            }
            await expectError("InvalidArgument") {
                _ = try await bed.client.call("SetSettings", [.string("TS00000001"), .variantDictionary(["volume": .uint32(1)])])
            }
            await expectError("UnknownDevice") {
                _ = try await bed.client.call("GetSettings", [.string("TS99999999")])
            }
            let device = try await bed.client.record("GetDevice", [.string("TS00000001")])
            #expect(device["state"]?.stringValue == "connected")
            #expect(device["firmware"]?.stringValue?.isEmpty == false)
            try await bed.stopDaemon()
        }
    }

    @Test func deadLettersAreListedRetriedAndDiscarded() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            // Three commands the backend refused for good, written through the real store before tetherd starts.
            var deadIDs: [UUID] = []
            do {
                let database = try GatewayDatabase(path: bed.databasePath)
                let registry = DeviceRegistry(database: database)
                let outbox = Outbox(database: database)
                var random = SystemRandomNumberGenerator()
                for serial in ["TS-DEAD-1", "TS-DEAD-2", "TS-DEAD-3"] {
                    try registry.setPairingState(.blocked, serial: serial, at: WallClock.now(), using: &random)
                }
                for lease in try outbox.claim(limit: 10, now: WallClock.now(), using: &random) {
                    _ = try outbox.fail(lease, error: "422 rejected by the backend", kind: .rejected, now: WallClock.now(), using: &random)
                    deadIDs.append(lease.command.id)
                }
            }
            #expect(deadIDs.count == 3)
            try await bed.startDaemon()

            let status = try await bed.client.status()
            #expect(status["outbox_dead"]?.uint32Value == 3)
            let dead = try await bed.client.records("ListDeadLetters", [.uint32(0)])
            #expect(Set(dead.compactMap { $0["id"]?.stringValue }) == Set(deadIDs.map { $0.uuidString.lowercased() }))
            #expect(dead.allSatisfy { $0["status"]?.stringValue == "dead" && $0["last_error"]?.stringValue == "422 rejected by the backend" })

            let first = deadIDs[0].uuidString.lowercased()
            #expect(try await bed.client.call("RetryDeadLetter", [.string(first)]) == [.uint32(1)])
            let pending = try await bed.client.records("ListOutbox", [.string("pending"), .uint32(0)])
            let retried = try #require(pending.first { $0["id"]?.stringValue == first })
            #expect(retried["attempts"]?.uint32Value == 0)
            #expect(try await bed.client.records("ListDeadLetters", [.uint32(0)]).count == 2)

            // A retried command is no longer a dead letter; bad ids are named.
            await expectError("InvalidArgument") { _ = try await bed.client.call("RetryDeadLetter", [.string(first)]) }
            await expectError("InvalidArgument") { _ = try await bed.client.call("DiscardDeadLetter", [.string("not-a-uuid")]) }
            await expectError("InvalidArgument") { _ = try await bed.client.call("ListOutbox", [.string("done"), .uint32(0)]) }

            #expect(try await bed.client.call("DiscardDeadLetter", [.string("*")]) == [.uint32(2)])
            #expect(try await bed.client.records("ListDeadLetters", [.uint32(0)]).isEmpty)
            #expect(try await bed.client.status()["outbox_dead"]?.uint32Value == 0)
            try await bed.stopDaemon()
        }
    }

    @Test func pairingPromptsAreForwardedToTheCaller() async throws {
        try await DaemonTestBed.with([.justWorks, .passkey]) { bed in
            try await bed.startDaemon()
            let asked = Mutex<[String]>([])
            let passkey = try await bed.device("C0:54:45:00:00:02").configuration.passkey
            try await bed.connection.objectServer.export([
                DBusInterface(name: "io.tether.PairingPrompt1", methods: [
                    DBusMethod("RequestPasskey", inputs: [DBusArgument("address", "s")], outputs: [DBusArgument("passkey", "u")]) { call in
                        asked.withLock { $0.append("RequestPasskey \(call.arguments[0].stringValue ?? "")") }
                        return [.uint32(passkey)]
                    },
                    DBusMethod("RequestConfirmation", inputs: [DBusArgument("address", "s"), DBusArgument("passkey", "u")]) { _ in
                        asked.withLock { $0.append("RequestConfirmation") }
                        return []
                    },
                    DBusMethod("DisplayPasskey", inputs: [DBusArgument("address", "s"), DBusArgument("passkey", "u"), DBusArgument("entered", "q")]) { _ in [] },
                    DBusMethod("Cancel") { _ in [] },
                ])
            ], at: "/io/tether/test/prompt")
            let paired = try await bed.pair("C0:54:45:00:00:02")
            #expect(paired["paired"]?.boolValue == true)
            #expect(asked.withLock { $0 } == ["RequestPasskey C0:54:45:00:00:02"])
            try await bed.waitUntilConnected(["TS00000002"])
            try await bed.stopDaemon()
        }
    }

    @Test func conflictsAreListedAndResolved() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            // The store's own conflict: synced at sensitivity 5, then the backend wants 9 while a user set 2 on
            // the device (docs/design/store.md, the merge table), written through the real services.
            do {
                let database = try GatewayDatabase(path: bed.databasePath)
                let consumption = ConsumptionService(database: database)
                let settings = DeviceSettingsService(database: database)
                var random = SystemRandomNumberGenerator()
                let synced = DeviceConfig(version: 4, settings: DeviceSettings(sensitivity: 5, ledBrightness: 60))
                _ = try consumption.apply(PersistBatch(id: 1, items: [.reportedConfig(serial: "TS-C", synced)]), at: WallClock.now(), using: &random)
                _ = try settings.changeDesired(serial: "TS-C", to: DeviceSettings(sensitivity: 9), by: .backend, at: WallClock.now(), using: &random)
                let local = DeviceConfig(version: 4, settings: DeviceSettings(sensitivity: 2, ledBrightness: 60))
                _ = try consumption.apply(PersistBatch(id: 2, items: [.reportedConfig(serial: "TS-C", local)]), at: WallClock.now(), using: &random)
            }
            try await bed.startDaemon()
            #expect(try await bed.client.status()["conflicts"]?.uint32Value == 1)
            let conflicts = try await bed.client.records("ListConflicts")
            #expect(conflicts.count == 1)
            let conflict = try #require(conflicts.first)
            #expect(conflict["serial"]?.stringValue == "TS-C")
            #expect(conflict["key"]?.byteValue == 1)
            #expect(conflict["name"]?.stringValue == "sensitivity")
            #expect(conflict["mine"]?.uint32Value == 9)
            #expect(conflict["theirs"]?.uint32Value == 2)
            #expect(conflict["base"]?.uint32Value == 5)

            await expectError("InvalidArgument") {
                _ = try await bed.client.call("ResolveConflict", [.string("TS-C"), .byte(1), .string("ours")])
            }
            _ = try await bed.client.call("ResolveConflict", [.string("TS-C"), .byte(1), .string("mine")])
            #expect(try await bed.client.records("ListConflicts").isEmpty)
            let settings = try await bed.client.record("GetSettings", [.string("TS-C")])
            #expect(settings["desired.sensitivity"]?.uint32Value == 9)
            await expectError("InvalidArgument") {
                _ = try await bed.client.call("ResolveConflict", [.string("TS-C"), .byte(1), .string("theirs")])
            }
            await expectError("UnknownDevice") {
                _ = try await bed.client.call("ResolveConflict", [.string("TS-NONE"), .byte(1), .string("mine")])
            }
            try await bed.stopDaemon()
        }
    }

    @Test func scanningReportsResultsAndSignals() async throws {
        try await DaemonTestBed.with([.justWorks, .passkey]) { bed in
            try await bed.startDaemon()
            let scanSignals = try await bed.connection.signals(matching: DBusMatchRule(
                interface: "io.tether.Gateway1", member: "ScanResult", path: "/io/tether/Gateway"))
            let deviceSignals = try await bed.connection.signals(matching: DBusMatchRule(
                interface: "io.tether.Gateway1", member: "DeviceChanged", path: "/io/tether/Gateway"))
            try await waitUntil("BlueZ seen by the gateway", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                try await bed.client.status()["bluez_available"]?.boolValue == true
            }
            _ = try await bed.client.call("StartScan")
            #expect(try await bed.client.status()["scanning"]?.boolValue == true)
            let first = try await within(.seconds(60), "a ScanResult signal") { await scanSignals.first { _ in true } }
            let seen = try #require(first?.arguments.first?.variantDictionaryValue)
            #expect(seen["address"]?.stringValue?.hasPrefix("C0:54:45:00:00:") == true)
            try await waitUntil("both devices in the scan results", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                let results = try await bed.client.records("ListScanResults")
                return Set(results.compactMap { $0["address"]?.stringValue }) == ["C0:54:45:00:00:01", "C0:54:45:00:00:02"]
            }
            let results = try await bed.client.records("ListScanResults")
            #expect(results.count == 2)
            #expect(results.allSatisfy { $0["known"]?.boolValue == false && $0["name"]?.stringValue?.hasPrefix("Tether-") == true })
            _ = try await bed.client.call("StopScan")
            #expect(try await bed.client.status()["scanning"]?.boolValue == false)

            // Pairing makes the device change state; DeviceChanged carries the device record.
            _ = try await bed.pair(DaemonTestBed.justWorks)
            let states = try await within(.seconds(60), "DeviceChanged up to connected") {
                var states: [String] = []
                for await signal in deviceSignals {
                    let device = signal.arguments.first?.variantDictionaryValue ?? [:]
                    states.append("\(device["address"]?.stringValue ?? "?") \(device["state"]?.stringValue ?? "?")")
                    if device["state"]?.stringValue == "connected" { break }
                }
                return states
            }
            #expect(states.last == "\(DaemonTestBed.justWorks) connected", "\(states)")
            try await bed.stopDaemon()
        }
    }

    @Test func forgetReleasesADevice() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            try await bed.startDaemon()
            _ = try await bed.pair(DaemonTestBed.justWorks)
            try await bed.waitUntilConnected(["TS00000001"])
            _ = try await bed.client.call("Forget", [.string("TS00000001")])
            let device = try await bed.client.record("GetDevice", [.string("TS00000001")])
            #expect(device["pairing_state"]?.stringValue == "unpaired")
            #expect(device["paired"]?.boolValue == false)
            try await waitUntil("the device to be disconnected and unbonded", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                let statistics = try await bed.statistics(DaemonTestBed.justWorks)
                return statistics["connected"]?.boolValue == false && statistics["paired"]?.boolValue == false
            }
            await expectError("UnknownDevice") { _ = try await bed.client.call("Forget", [.string("TS99999999")]) }
            try await bed.stopDaemon()
        }
    }

    @Test func aCallerWithoutAPromptGetsPromptCanceled() async throws {
        try await DaemonTestBed.with([.passkey]) { bed in
            try await bed.startDaemon()
            // No PairingPrompt1 object at the path: tetherd cannot ask, so the pairing is canceled.
            await expectError("PromptCanceled") { _ = try await bed.pair("C0:54:45:00:00:01", prompt: "/nobody/here") }
            await expectError("InvalidArgument") { _ = try await bed.pair("not-an-address") }
            try await bed.stopDaemon()
        }
    }
}
