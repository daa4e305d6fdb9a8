import DBus
import Foundation
import Testing
import TetherTestSupport

extension DBusIntegrationTests {
    /// Every D-Bus type, both directions, against peers that do not share Tether's code: dbus-python (libdbus
    /// underneath, but its own type mapping) and gdbus (GLib's independent implementation of the wire format).
    @Suite struct PeerMarshalling {
        /// What the dbus-python echo client sends for each case, as Tether must decode it (inside the `v`).
        static let expectedFromPython: [String: DBusValue] = [
            "byte": .byte(0xfe),
            "bool": .bool(true),
            "int16": .int16(-32768),
            "uint16": .uint16(65535),
            "int32": .int32(-2_147_483_648),
            "uint32": .uint32(4_294_967_295),
            "int64": .int64(.min),
            "uint64": .uint64(.max),
            "double": .double(-1.25e-300),
            "string": .string("h\u{e9}llo \u{2713}"),
            "empty-string": .string(""),
            "objectpath": .objectPath("/org/bluez/hci0"),
            "signature": .signature("a{oa{sa{sv}}}"),
            "array-string": .strings(["a", "b"]),
            "array-empty": .array(elementSignature: "(ii)", []),
            "array-bytes": .bytes([0, 255]),
            "dict-sv": .dictionary(
                keySignature: "s", valueSignature: "v",
                [
                    DBusDictionaryEntry(key: .string("a"), value: .variant(.uint32(1))),
                    DBusDictionaryEntry(key: .string("b"), value: .variant(.string("x"))),
                ]),
            "dict-qv": .dictionary(
                keySignature: "q", valueSignature: "v",
                [DBusDictionaryEntry(key: .uint16(0x004C), value: .variant(.bytes([1])))]),
            "dict-empty": .dictionary(keySignature: "o", valueSignature: "a{sv}", []),
            "struct": .structure([.int32(1), .string("s"), .array(elementSignature: "u", [])]),
            "variant-in-variant": .variant(.int32(7)),
            "array-of-variants": .array(elementSignature: "v", [.variant(.int16(1)), .variant(.string("two"))]),
            "nested": .array(
                elementSignature: "a{s(yd)}",
                [.dictionary(
                    keySignature: "s", valueSignature: "(yd)",
                    [DBusDictionaryEntry(key: .string("k"), value: .structure([.byte(1), .double(2.5)]))])]),
        ]

        @Test func pythonCallsTetherWithEveryType() async throws {
            try await withPrivateBus { bus, connection in
                let echo = EchoObject()
                try await connection.objectServer.export([echo.interface], at: EchoObject.path)
                let output = try await PythonPeer.run(PeerScripts.echoClient, [bus.address, connection.uniqueName])
                #expect(output.status == 0, "\(output.standardError)")
                let failures = output.lines.filter { !$0.hasPrefix("OK ") }
                #expect(failures.isEmpty, "\(failures)")
                #expect(output.lines.count == Self.expectedFromPython.count, "\(output.standardOutput)")

                let received = echo.echoed
                #expect(Set(received.keys) == Set(Self.expectedFromPython.keys))
                for (name, expected) in Self.expectedFromPython {
                    #expect(received[name] == .variant(expected), "\(name)")
                }
            }
        }

        @Test func tetherCallsPythonWithEveryType() async throws {
            try await withPrivateBus { bus, connection in
                let service = try await startPythonService(bus: bus, connection: connection)
                defer { service.kill() }
                var values = Array(Self.expectedFromPython.values)
                values += [
                    .variantDictionary(["RSSI": .int16(-61), "UUIDs": .strings(["0000180d-0000-1000-8000-00805f9b34fb"])]),
                    .structure([.objectPath("/"), .signature(""), .bool(false)]),
                    .array(elementSignature: "ay", [.bytes([]), .bytes([7])]),
                ]
                for value in values {
                    let echoed = try await connection.call(
                        destination: "com.example.Peer", path: "/peer", interface: "com.example.Peer",
                        member: "Echo", arguments: [.variant(value)])
                    #expect(echoed == [.variant(value)], "\(value)")

                    let described = try await connection.call(
                        destination: "com.example.Peer", path: "/peer", interface: "com.example.Peer",
                        member: "Describe", arguments: [.variant(value)])
                    #expect(described == [.string(pythonDescription(of: .variant(value)))], "\(value)")
                }

                let basics: [DBusValue] = [
                    .byte(7), .bool(false), .int16(-3), .uint16(4), .int32(-5), .uint32(6), .int64(-7), .uint64(8),
                    .double(0.5), .string("s"), .objectPath("/o"), .signature("a{sv}"),
                ]
                let described = try await connection.call(
                    destination: "com.example.Peer", path: "/peer", interface: "com.example.Peer",
                    member: "DescribeBasics", arguments: basics)
                #expect(described == [.string(basics.map(pythonDescription(of:)).joined(separator: " "))])
            }
        }

        @Test func gdbusCallsTetherWithTypedArguments() async throws {
            try await withPrivateBus { bus, connection in
                let echo = EchoObject()
                try await connection.objectServer.export([echo.interface], at: EchoObject.path)
                let arguments = [
                    "byte 0xfe", "true", "int16 -32768", "uint16 65535", "int32 -2147483648", "uint32 4294967295",
                    "int64 -9223372036854775808", "uint64 18446744073709551615", "1.5", "'h\u{e9}llo \u{2713}'",
                    "objectpath '/org/bluez/hci0'", "signature 'a{sv}'", "['a', 'b']", "{'k': <uint32 1>}",
                    "(7, 'x')", "{uint16 76: <[byte 0x01, 0x02]>}", "[[byte 0x01], @ay []]", "<<int16 -2>>",
                ]
                let output = try await ChildProcess.run(
                    "/usr/bin/gdbus",
                    ["call", "--address", bus.address, "--dest", connection.uniqueName,
                     "--object-path", EchoObject.path.rawValue, "--method", "com.example.Echo.Typed"] + arguments)
                #expect(output.status == 0, "\(output.standardError)")
                #expect(
                    output.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
                        == "(byte 0xfe, true, int16 -32768, uint16 65535, -2147483648, uint32 4294967295, int64 -9223372036854775808, uint64 18446744073709551615, 1.5, 'h\u{e9}llo \u{2713}', objectpath '/org/bluez/hci0', signature 'a{sv}', ['a', 'b'], {'k': <uint32 1>}, (7, 'x'), {uint16 76: <[byte 0x01, 0x02]>}, [[byte 0x01], []], <<int16 -2>>)"
                )
                let expected: [DBusValue] = [
                    .byte(0xfe), .bool(true), .int16(-32768), .uint16(65535), .int32(-2_147_483_648),
                    .uint32(4_294_967_295), .int64(.min), .uint64(.max), .double(1.5), .string("h\u{e9}llo \u{2713}"),
                    .objectPath("/org/bluez/hci0"), .signature("a{sv}"), .strings(["a", "b"]),
                    .variantDictionary(["k": .uint32(1)]), .structure([.int32(7), .string("x")]),
                    .dictionary(
                        keySignature: "q", valueSignature: "v",
                        [DBusDictionaryEntry(key: .uint16(76), value: .variant(.bytes([1, 2])))]),
                    .array(elementSignature: "ay", [.bytes([1]), .bytes([])]),
                    .variant(.variant(.int16(-2))),
                ]
                #expect(echo.typed == expected)
            }
        }
    }
}

/// Starts the dbus-python service and waits until it owns `com.example.Peer`.
func startPythonService(bus: DBusPrivateBus, connection: DBusConnection) async throws -> ChildProcess {
    var started: ChildProcess?
    do {
        _ = try await awaitNameOwner("com.example.Peer", on: connection) {
            started = try PythonPeer.start(PeerScripts.service, [bus.address])
        }
    } catch {
        guard let started else { throw error }
        started.kill()
        let output = try await started.finish()
        throw WaitTimeout(what: "the Python service to own its name: \(output.standardError)")
    }
    guard let started else { throw WaitTimeout(what: "the Python service") }
    return started
}
