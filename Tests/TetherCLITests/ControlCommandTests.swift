import DBus
import Foundation
import TetherControlClient
import Testing
import ControlContract

/// The built `tether` against io.tether.Gateway1 as docs/specs/control-api.md defines it, served by `ContractGateway` on a
/// real private dbus-daemon: output, JSON and exit codes as a script or a technician sees them.
@Suite("tether against the control API contract", .serialized, .timeLimit(.minutes(5)))
struct ControlCommandTests {
    @Test("status prints a summary, and --json the record with the contract's keys")
    func status() async throws {
        try await withContractGateway { bus, _ in
            let table = try await TetherProcess.run(["status"], bus: bus)
            #expect(table.status == 0, "\(table.standardError)")
            #expect(table.standardOutput.contains("devices     2 known, 1 connected"))
            #expect(table.standardOutput.contains("outbox      1 pending, 0 in flight, 0 failed, 0 conflict, 2 dead; oldest pending 4 s"))
            #expect(table.standardOutput.contains("storage     ok, database 1.5 MiB, SQLite heap 3.1 MiB"), "\(table.standardOutput)")
            #expect(table.standardOutput.contains("health      12 samples waiting (3 failed, retried), 1 rejected; 2 deletions waiting"), "\(table.standardOutput)")

            let json = try await TetherProcess.run(["status", "--json"], bus: bus)
            #expect(json.status == 0)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
            #expect(object["events_stored"] as? Int == 1234)
            #expect(object["last_sync_result"] as? String == "ok")
            #expect(object["sync_clock_skew"] as? Int == -12_000_000)
        }
    }

    @Test("--bus on the command line wins over TETHER_BUS_ADDRESS")
    func busOption() async throws {
        try await withContractGateway { bus, _ in
            let result = try await TetherProcess.run(["status", "--json", "--bus", bus], bus: "unix:path=/nonexistent/other")
            #expect(result.status == 0, "\(result.standardError)")
        }
    }

    @Test("devices lists a table and JSON; one device by address; an unknown device exits 5 with the daemon's words")
    func devices() async throws {
        try await withContractGateway { bus, _ in
            let table = try await TetherProcess.run(["devices"], bus: bus)
            #expect(table.status == 0)
            #expect(table.lines.first?.hasPrefix("SERIAL      ADDRESS            NAME         PAIRED  STATE") == true)
            #expect(table.lines.count == 3)
            #expect(table.lines[2].contains("backoff") && table.lines[2].contains("le-connection-abort-by-local"))

            let json = try await TetherProcess.run(["devices", "--json"], bus: bus)
            let array = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]])
            #expect(array.map { $0["serial"] as? String } == ["TS00000001", "TS00000002"])

            let one = try await TetherProcess.run(["devices", "C0:54:45:00:00:01", "--json"], bus: bus)
            let record = try #require(try JSONSerialization.jsonObject(with: Data(one.standardOutput.utf8)) as? [String: Any])
            #expect(record["mtu"] as? Int == 247)

            let missing = try await TetherProcess.run(["devices", "TS99"], bus: bus)
            #expect(missing.status == 5)
            #expect(missing.standardError == "tether: No device 'TS99'; 'tether devices' lists the known ones.\n")
        }
    }

    @Test("scan --json prints each result as a line, and stops the scan when the duration ends")
    func scanJSON() async throws {
        try await withContractGateway { bus, gateway in
            let result = try await TetherProcess.run(["scan", "--duration", "2", "--json"], bus: bus)
            #expect(result.status == 0, "\(result.standardError)")
            let lines = try result.lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            #expect(lines.map { $0["address"] as? String } == ["C0:54:45:00:00:01", "C0:54:45:00:00:03", "C0:54:45:00:00:03"])
            #expect(lines.last?["rssi"] as? Int == -52)
            let counts = gateway.state.withLock { ($0.scanStarts, $0.scanStops, $0.scanning) }
            #expect(counts == (1, 1, false))
        }
    }

    @Test("scan without a terminal prints the merged table once, strongest first")
    func scanTable() async throws {
        try await withContractGateway { bus, _ in
            let result = try await TetherProcess.run(["scan", "--duration", "2"], bus: bus)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.lines == [
                "ADDRESS            NAME         RSSI     KNOWN  PAIRED",
                "C0:54:45:00:00:01  Tether-0001  -48 dBm  yes    yes",
                "C0:54:45:00:00:03  Tether-0003  -52 dBm  no     no",
            ])
        }
    }

    @Test("pair answers a passkey question from --passkey; a wrong passkey fails with exit 1 and BlueZ's reason")
    func pairPasskeyFlag() async throws {
        try await withContractGateway { bus, gateway in
            let paired = try await TetherProcess.run(["pair", "C0:54:45:00:00:03", "--passkey", "123456"], bus: bus)
            #expect(paired.status == 0, "\(paired.standardError)")
            #expect(paired.standardOutput == "paired C0:54:45:00:00:03 (Tether-pair) as TS45000003\n")
            #expect(gateway.state.withLock { $0.devices["TS45000003"] } != nil)

            let wrong = try await TetherProcess.run(["pair", "C0:54:45:00:00:03", "--passkey", "111111"], bus: bus)
            #expect(wrong.status == 1)
            #expect(wrong.standardError.contains("AuthenticationFailed (wrong passkey)"))
        }
    }

    @Test("pair reads the passkey from stdin when no flag gives it, and end of input cancels")
    func pairPasskeyPrompt() async throws {
        try await withContractGateway { bus, _ in
            let typed = try await TetherProcess.run(["pair", "C0:54:45:00:00:03", "--json"], bus: bus, input: "123456\n")
            #expect(typed.status == 0, "\(typed.standardError)")
            #expect(typed.standardError.contains("Enter the 6-digit passkey shown on C0:54:45:00:00:03: "))
            let record = try #require(try JSONSerialization.jsonObject(with: Data(typed.standardOutput.utf8)) as? [String: Any])
            #expect(record["paired"] as? Bool == true)

            let retyped = try await TetherProcess.run(["pair", "C0:54:45:00:00:03"], bus: bus, input: "12345x\n123456\n")
            #expect(retyped.status == 0)
            #expect(retyped.standardError.contains("'12345x' is not a passkey"))

            let nothing = try await TetherProcess.run(["pair", "C0:54:45:00:00:03"], bus: bus, input: "")
            #expect(nothing.status == 1)
            #expect(nothing.standardError.contains("no answer (end of input)"))
        }
    }

    @Test("pair confirms a numeric comparison with --yes or y on stdin; n rejects it")
    func pairConfirmation() async throws {
        try await withContractGateway { bus, _ in
            let yes = try await TetherProcess.run(["pair", "C0:54:45:00:00:04", "--yes"], bus: bus)
            #expect(yes.status == 0, "\(yes.standardError)")
            let typed = try await TetherProcess.run(["pair", "C0:54:45:00:00:04"], bus: bus, input: "y\n")
            #expect(typed.status == 0)
            #expect(typed.standardError.contains("Does C0:54:45:00:00:04 show 654321? [y/N] "))
            let refused = try await TetherProcess.run(["pair", "C0:54:45:00:00:04"], bus: bus, input: "n\n")
            #expect(refused.status == 1)
            #expect(refused.standardError.contains("AuthenticationRejected"))
            // --passkey confirms only the number it names.
            let mismatch = try await TetherProcess.run(["pair", "C0:54:45:00:00:04", "--passkey", "000001"], bus: bus)
            #expect(mismatch.status == 1)
        }
    }

    @Test("the prompt object answers only the daemon: another client cannot feed a passkey in")
    func promptRefusesStrangers() async throws {
        let bus = try await DBusPrivateBus.start()
        defer { bus.stop() }
        let owner = try await DBusConnection.connect(to: .address(bus.address))
        let stranger = try await DBusConnection.connect(to: .address(bus.address))
        struct Fixed: PairingResponder {
            func passkey(for address: String) async -> UInt32? { 42 }
            func confirm(_ passkey: UInt32, for address: String) async -> Bool { true }
            func display(_ passkey: UInt32, entered: UInt16, for address: String) async {}
            func canceled() async {}
        }
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let path = PairingPrompt.path(processIdentifier: 7)
        try await PairingPrompt.export(on: client, at: path, daemon: owner.uniqueName, responder: Fixed())
        let answer = try await owner.call(
            destination: client.uniqueName, path: path, interface: GatewayContract.promptInterface,
            member: "RequestPasskey", arguments: [.string("C0:54:45:00:00:03")])
        #expect(answer == [.uint32(42)])
        await #expect(throws: DBusError(.accessDenied, "")) {
            _ = try await stranger.call(
                destination: client.uniqueName, path: path, interface: GatewayContract.promptInterface,
                member: "RequestPasskey", arguments: [.string("C0:54:45:00:00:03")])
        }
        for connection in [owner, stranger, client] { await connection.close() }
    }

    @Test("settings: get, set with typed values, and the round trip shows the change")
    func settingsRoundTrip() async throws {
        try await withContractGateway { bus, gateway in
            let before = try await TetherProcess.run(["settings", "get", "TS00000001"], bus: bus)
            #expect(before.status == 0)
            #expect(before.lines == [
                "TS00000001  version 0",
                "SETTING          DESIRED  REPORTED",
                "haptic_feedback  true     true",
                "led_brightness   80       80",
                "nickname         kitchen  kitchen",
                "sensitivity      3        3",
            ])
            let set = try await TetherProcess.run(
                ["settings", "set", "TS00000001", "led_brightness=40", "haptic_feedback=off", "nickname=hall way", "--json"], bus: bus)
            #expect(set.status == 0, "\(set.standardError)")
            let record = try #require(try JSONSerialization.jsonObject(with: Data(set.standardOutput.utf8)) as? [String: Any])
            #expect(record["desired.led_brightness"] as? Int == 40)
            #expect(record["desired.haptic_feedback"] as? Bool == false)
            #expect(record["version"] as? Int == 1)
            #expect(gateway.state.withLock { $0.settings["TS00000001"]?["nickname"] } == .string("hall way"))

            let after = try await TetherProcess.run(["settings", "get", "TS00000001", "--json"], bus: bus)
            let reread = try #require(try JSONSerialization.jsonObject(with: Data(after.standardOutput.utf8)) as? [String: Any])
            #expect(reread["desired.led_brightness"] as? Int == 40)
            #expect(reread["desired.sensitivity"] as? Int == 3)
        }
    }

    @Test("settings set refuses unknown names and badly typed values with exit 2, and passes the daemon's range check on")
    func settingsErrors() async throws {
        try await withContractGateway { bus, gateway in
            let unknown = try await TetherProcess.run(["settings", "set", "TS00000001", "volume=3"], bus: bus)
            #expect(unknown.status == 2)
            #expect(unknown.standardError == "tether: TS00000001 has no setting 'volume'; its settings are: daily_limit, haptic_feedback, led_brightness, nickname, sensitivity, sleep_timeout_seconds\n")
            let typed = try await TetherProcess.run(["settings", "set", "TS00000001", "haptic_feedback=maybe"], bus: bus)
            #expect(typed.status == 2)
            #expect(typed.standardError.contains("haptic_feedback is a switch: give on or off"))
            let negative = try await TetherProcess.run(["settings", "set", "TS00000001", "led_brightness=-1"], bus: bus)
            #expect(negative.status == 2)
            #expect(negative.standardError.contains("led_brightness takes a whole number from 0 to 4294967295"))
            let range = try await TetherProcess.run(["settings", "set", "TS00000001", "led_brightness=400"], bus: bus)
            #expect(range.status == 2)
            #expect(range.standardError == "tether: led_brightness must be 0-100, not 400.\n")
            #expect(gateway.state.withLock { $0.settingsVersion["TS00000001"] } == nil)
        }
    }

    @Test("outbox and dead letters: list, retry one, discard the rest; an unknown id exits 5")
    func deadLetters() async throws {
        try await withContractGateway { bus, gateway in
            let outbox = try await TetherProcess.run(["outbox", "list", "--status", "pending", "--json"], bus: bus)
            let pending = try #require(try JSONSerialization.jsonObject(with: Data(outbox.standardOutput.utf8)) as? [[String: Any]])
            #expect(pending.count == 1)

            let list = try await TetherProcess.run(["dead-letters", "list"], bus: bus)
            #expect(list.status == 0)
            #expect(list.lines.count == 3)
            #expect(list.standardOutput.contains("422 serial too long"))

            let retry = try await TetherProcess.run(["dead-letters", "retry", ContractGateway.State.deadLetterID.uppercased()], bus: bus)
            #expect(retry.status == 0, "\(retry.standardError)")
            #expect(retry.standardOutput == "requeued 1 dead letter\n")
            let status = gateway.state.withLock { $0.outbox.first { $0["id"]?.stringValue == ContractGateway.State.deadLetterID }?["status"] }
            #expect(status == .string("pending"))

            let again = try await TetherProcess.run(["dead-letters", "retry", ContractGateway.State.deadLetterID], bus: bus)
            #expect(again.status == 5)
            #expect(again.standardError.contains("no dead letter \(ContractGateway.State.deadLetterID)"))

            let discard = try await TetherProcess.run(["dead-letters", "discard", "--all"], bus: bus)
            #expect(discard.standardOutput == "discarded 1 dead letter\n")
            let empty = try await TetherProcess.run(["dead-letters", "list", "--json"], bus: bus)
            #expect(empty.standardOutput == "[\n\n]\n" || empty.standardOutput == "[]\n")
        }
    }

    @Test("conflicts: list and resolve by setting name or key")
    func conflicts() async throws {
        try await withContractGateway { bus, gateway in
            let list = try await TetherProcess.run(["conflicts", "list"], bus: bus)
            #expect(list.lines == [
                "SERIAL      KEY  SETTING         MINE (DESIRED)  THEIRS (DEVICE)  BASE  DETECTED",
                "TS00000001  2    led_brightness  40              90               80    2026-11-18 11:06:40Z",
            ])
            let resolve = try await TetherProcess.run(["conflicts", "resolve", "TS00000001", "led_brightness", "--keep", "theirs"], bus: bus)
            #expect(resolve.status == 0, "\(resolve.standardError)")
            let resolved = gateway.state.withLock { $0.resolved.map { "\($0.serial) \($0.key) \($0.keep)" } }
            #expect(resolved == ["TS00000001 2 theirs"])
            let gone = try await TetherProcess.run(["conflicts", "resolve", "TS00000001", "2", "--keep", "mine"], bus: bus)
            #expect(gone.status == 5)
            let bad = try await TetherProcess.run(["conflicts", "resolve", "TS00000001", "2", "--keep", "both"], bus: bus)
            #expect(bad.status == 2)
        }
    }

    @Test("a refused mutating call exits 4 and says who may do it; reads still work")
    func accessDenied() async throws {
        var state = ContractGateway.State.sample
        state.refuseMutations = true
        try await withContractGateway(state) { bus, _ in
            let forget = try await TetherProcess.run(["forget", "TS00000001"], bus: bus)
            #expect(forget.status == 4)
            #expect(forget.standardError.hasPrefix("tether: permission denied: Forget changes the gateway, which only root and the 'tether' group may do.\n"))
            #expect(!forget.standardError.contains("matched rules"))
            let read = try await TetherProcess.run(["devices"], bus: bus)
            #expect(read.status == 0)
        }
    }

    @Test("forget and sync: mutating calls that succeed")
    func forgetAndSync() async throws {
        try await withContractGateway { bus, gateway in
            let forget = try await TetherProcess.run(["forget", "C0:54:45:00:00:02"], bus: bus)
            #expect(forget.status == 0)
            #expect(gateway.state.withLock { $0.devices["TS00000002"] } == nil)
            let sync = try await TetherProcess.run(["sync"], bus: bus)
            #expect(sync.status == 0)
            #expect(gateway.state.withLock { $0.syncRequests } == 1)
        }
    }

    @Test("no daemon on the bus, or no bus at all: exit 3 with what to do")
    func unreachable() async throws {
        let bus = try await DBusPrivateBus.start()
        defer { bus.stop() }
        let empty = try await TetherProcess.run(["status"], bus: bus.address)
        #expect(empty.status == 3)
        #expect(empty.standardError.hasPrefix("tether: tetherd is not running on this bus (nobody owns io.tether.Gateway).\nStart it with"))
        let nowhere = try await TetherProcess.run(["devices", "--json"], bus: "unix:path=/nonexistent/tether-bus")
        #expect(nowhere.status == 3)
        #expect(nowhere.standardError.contains("cannot reach the D-Bus bus at unix:path=/nonexistent/tether-bus"))
        #expect(nowhere.standardOutput.isEmpty)
    }

    @Test("usage errors exit 2; help exits 0")
    func usage() async throws {
        let missing = try await TetherProcess.run(["settings", "set", "TS1"])
        #expect(missing.status == 2)
        #expect(missing.standardError.contains("Missing expected argument '<name=value> ...'"))
        let unknown = try await TetherProcess.run(["frobnicate"])
        #expect(unknown.status == 2)
        let help = try await TetherProcess.run(["help", "pair"])
        #expect(help.status == 0)
        #expect(help.standardOutput.contains("USAGE: tether pair"))
    }
}
