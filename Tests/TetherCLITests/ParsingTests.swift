import ArgumentParser
import DBus
import Foundation
import TetherControlClient
import Testing
@testable import TetherCLI

@Suite("tether parsing, values and error mapping")
struct ParsingTests {
    @Test("--bus: the option, then TETHER_BUS_ADDRESS, then the system bus")
    func busChoice() throws {
        let explicit = try BusOptions.parse(["--bus", "unix:path=/tmp/b"])
        #expect(explicit.address(environment: ["TETHER_BUS_ADDRESS": "unix:path=/tmp/e"]) == .address("unix:path=/tmp/b"))
        let system = try BusOptions.parse(["--bus", "system"])
        #expect(system.address(environment: ["TETHER_BUS_ADDRESS": "unix:path=/tmp/e"]) == .system)
        let none = try BusOptions.parse([])
        #expect(none.address(environment: ["TETHER_BUS_ADDRESS": "unix:path=/tmp/e"]) == .address("unix:path=/tmp/e"))
        #expect(none.address(environment: ["TETHER_BUS_ADDRESS": ""]) == .system)
        #expect(none.address(environment: [:]) == .system)
    }

    @Test("every command parses its documented form")
    func commandsParse() throws {
        let forms: [[String]] = [
            ["status", "--json"], ["devices"], ["devices", "TS1", "--json"], ["scan", "--duration", "0", "--json"],
            ["pair", "C0:54:45:00:00:01", "--passkey", "000123"], ["pair", "c0:54:45:00:00:0a", "--yes", "--timeout", "30"],
            ["forget", "TS1"], ["settings", "get", "TS1"], ["settings", "set", "TS1", "a=1", "b=off"],
            ["outbox", "list", "--status", "in_flight", "--limit", "5"], ["dead-letters", "list"],
            ["dead-letters", "retry", "--all"], ["dead-letters", "discard", "0193a5c2-7d1e-7b3a-9f00-2c4d5e6f7a8b"],
            ["conflicts", "list", "--json"], ["conflicts", "resolve", "TS1", "led_brightness", "--keep", "mine"], ["sync"],
        ]
        for form in forms {
            #expect(throws: Never.self, "\(form)") { _ = try TetherRootCommand.parseAsRoot(form) }
        }
    }

    @Test("bad arguments are usage errors naming what is wrong")
    func badArguments() {
        let cases: [([String], String)] = [
            (["pair", "C0:54:45:00:00"], "is not a Bluetooth address"),
            (["pair", "C0:54:45:00:00:01", "--passkey", "1000000"], "--passkey must have at most six digits"),
            (["scan", "--duration=-1"], "--duration must be between 0 and 86400"),
            (["outbox", "list", "--status", "sent"], "--status must be one of pending, in_flight, failed, conflict, dead"),
            (["dead-letters", "retry"], "Name a dead letter's id, or give --all."),
            (["dead-letters", "retry", "0193a5c2-7d1e-7b3a-9f00-2c4d5e6f7a8b", "--all"], "either an id or --all"),
            (["dead-letters", "discard", "42"], "'42' is not a command id"),
            (["settings", "set", "TS1", "=3"], "'=3' is not NAME=VALUE"),
            (["conflicts", "resolve", "TS1", "x", "--keep", "both"], "both"),
        ]
        for (arguments, expected) in cases {
            do {
                _ = try TetherRootCommand.parseAsRoot(arguments)
                Issue.record("\(arguments) parsed")
            } catch {
                #expect(TetherRootCommand.exitCode(for: error) == .validationFailure, "\(arguments)")
                #expect(TetherRootCommand.fullMessage(for: error).contains(expected), "\(arguments): \(TetherRootCommand.fullMessage(for: error))")
            }
        }
    }

    @Test("setting values convert to the setting's own type")
    func settingValues() throws {
        #expect(try SettingValue.parse("40", name: "b", like: .uint32(80)) == .uint32(40))
        #expect(try SettingValue.parse("off", name: "h", like: .bool(true)) == .bool(false))
        #expect(try SettingValue.parse("ON", name: "h", like: .variant(.bool(false))) == .bool(true))
        #expect(try SettingValue.parse("hall", name: "n", like: .string("x")) == .string("hall"))
        #expect(try SettingValue.parse("255", name: "k", like: .byte(1)) == .byte(255))
        #expect(throws: SettingValue.Problem(message: "k takes a whole number from 0 to 255, not '256'")) {
            try SettingValue.parse("256", name: "k", like: .byte(1))
        }
        #expect(throws: SettingValue.Problem.self) { try SettingValue.parse("-1", name: "b", like: .uint32(1)) }
        #expect(try SettingValue.assignment("nickname=a=b") == ("nickname", "a=b"))
        #expect(SettingValue.names(in: ["desired.b": .bool(true), "reported.b": .bool(true), "desired.a": .uint32(1), "version": .uint64(1)]) == ["a", "b", "daily_limit", "haptic_feedback", "led_brightness", "sensitivity", "sleep_timeout_seconds"])
    }

    @Test("every D-Bus failure maps to one documented exit code")
    func errorMapping() {
        func code(_ name: String) -> Int32 {
            ControlFailureReport(GatewayControlError(DBusError(name: name, message: "m"), method: "X")).code.rawValue
        }
        #expect(code("org.freedesktop.DBus.Error.ServiceUnknown") == 3)
        #expect(code("org.freedesktop.DBus.Error.NameHasNoOwner") == 3)
        #expect(code("org.freedesktop.DBus.Error.NoReply") == 3)
        #expect(code("org.freedesktop.DBus.Error.AccessDenied") == 4)
        #expect(code("io.tether.Gateway1.Error.UnknownDevice") == 5)
        #expect(code("io.tether.Gateway1.Error.InvalidArgument") == 2)
        for name in ["NotPermitted", "Busy", "PairingFailed", "PromptCanceled", "StorageFailed", "Unavailable", "SomethingNew"] {
            #expect(code("io.tether.Gateway1.Error." + name) == 1, "\(name)")
        }
        #expect(code("org.freedesktop.DBus.Error.UnknownMethod") == 1)
        #expect(code("com.example.Weird") == 1)
        let daemon = ControlFailureReport(GatewayControlError(DBusError(name: "io.tether.Gateway1.Error.Busy", message: "Another pairing is running; wait for it."), method: "Pair"))
        #expect(daemon.message == "Another pairing is running; wait for it.\nWait for the other pairing or scan to finish, then try again.")
    }

    @Test("the scan table merges by address and sorts strongest first")
    func scanTable() {
        var table = ScanTable()
        let changes = [
            table.merge(GatewayRecord(["address": .string("A"), "rssi": .int16(-70)])),
            table.merge(GatewayRecord(["address": .string("B"), "rssi": .int16(-60), "name": .string("b")])),
            table.merge(GatewayRecord(["address": .string("B"), "rssi": .int16(-60), "name": .string("b")])),
            table.merge(GatewayRecord(["address": .string("A"), "rssi": .int16(-50)])),
            table.merge(GatewayRecord(["rssi": .int16(-50)])),
        ]
        #expect(changes == [true, true, false, true, false])
        #expect(table.lines == ["ADDRESS  NAME  RSSI     KNOWN  PAIRED", "A        -     -50 dBm  -      -", "B        b     -60 dBm  -      -"])
    }

    @Test("times and durations read as UTC and in sensible units")
    func formatting() {
        #expect(RecordFormatting.time(1_795_000_000_000_000_000) == "2026-11-18 11:06:40Z")
        #expect(RecordFormatting.time(nil) == "-")
        #expect(RecordFormatting.duration(4_000_000_000) == "4 s")
        #expect(RecordFormatting.duration(-12_000_000) == "-12 ms")
        #expect(RecordFormatting.duration(7_200_000_000_000) == "2 h")
        #expect(RecordFormatting.bytes(1_572_864) == "1.5 MiB")
    }
}
