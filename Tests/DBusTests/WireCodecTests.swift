import Foundation
import Testing

@testable import DBus
import TetherPrimitives

/// The wire-protocol reader and writer against libdbus, the reference implementation: what one writes the other
/// must read back identically, for every type. Bad bytes must be refused with `WireFormatError`, never trap.
@Suite struct WireCodecTests {
    static let values = MessageRoundTripTests.values

    @Test func libdbusReadsWhatTheWireWriterWrites() throws {
        let bytes = try WireMessageEncoder.methodCall(
            serial: 7, destination: "org.example.Peer", path: "/org/example/a", interface: "org.example.Iface",
            member: "Method", arguments: Self.values)
        let message = try MessageReference.demarshalling(bytes)
        // The header borrows the message: keep the reference alive while it is read.
        try withExtendedLifetime(message) {
            let header = try #require(ReceivedMessage(borrowing: message.pointer))
            #expect(header.kind == .methodCall)
            #expect(header.serial == 7)
            #expect(header.destination == "org.example.Peer")
            #expect(header.path == "/org/example/a")
            #expect(header.interface == "org.example.Iface")
            #expect(header.member == "Method")
            #expect(try header.arguments() == Self.values)
        }
    }

    @Test func theWireReaderReadsWhatLibdbusWrites() throws {
        let message = try MessageReference.signal(
            path: "/org/bluez/hci0", interface: "org.example.Iface", member: "Changed", destination: ":1.7")
        try message.append(Self.values)
        let bytes = try message.marshalled(serial: 42)
        try bytes.withUnsafeBytes { raw throws in
            #expect(try WireMessageView.length(ofMessageStartingWith: raw) == raw.count)
            let view = try WireMessageView(parsing: raw)
            #expect(view.kind == .signal)
            #expect(view.serial == 42)
            #expect(WireMessageView.string(view.path) == "/org/bluez/hci0")
            #expect(WireMessageView.string(view.interface) == "org.example.Iface")
            #expect(WireMessageView.string(view.member) == "Changed")
            #expect(WireMessageView.string(view.destination) == ":1.7")
            #expect(try view.arguments() == Self.values)
        }
    }

    @Test func repliesAndErrorsSurviveTheTripBothWays() throws {
        let reply = try WireMessageEncoder.reply(
            serial: 9, replySerial: 3, destination: ":1.4", errorName: "org.example.Error.Broken",
            arguments: [.string("it broke")])
        let parsed = try MessageReference.demarshalling(reply)
        try withExtendedLifetime(parsed) {
            let header = try #require(ReceivedMessage(borrowing: parsed.pointer))
            #expect(header.kind == .error)
            #expect(header.replySerial == 3)
            #expect(header.errorName == "org.example.Error.Broken")
            #expect(header.firstStringArgument() == "it broke")
        }

        let back = try parsed.marshalled(serial: 9)
        try back.withUnsafeBytes { raw throws in
            let view = try WireMessageView(parsing: raw)
            #expect(view.kind == .error)
            #expect(view.replySerial == 3)
            #expect(try view.arguments() == [.string("it broke")])
        }
    }

    /// libdbus writes only the machine's byte order; the spec allows either, and the bus relays the sender's.
    @Test func readsBigEndianMessages() throws {
        var body: [UInt8] = [0x01, 0x02, 0x03, 0x04]  // u 0x01020304
        body += [0, 0, 0, 2] + Array("hi".utf8) + [0]  // s "hi"
        var fields: [UInt8] = []
        func field(_ code: UInt8, _ type: Character, _ value: [UInt8]) {
            while fields.count % 8 != 0 { fields.append(0) }
            fields += [code, 1, UInt8(ascii: type.unicodeScalars.first!), 0]
            fields += value
        }
        func string(_ text: String) -> [UInt8] {
            let utf8 = Array(text.utf8)
            return [0, 0, 0, UInt8(utf8.count)] + utf8 + [0]
        }
        field(1, "o", string("/p"))
        field(2, "s", string("a.b"))
        field(3, "s", string("M"))
        field(8, "g", [2] + Array("us".utf8) + [0])
        var message: [UInt8] = [UInt8(ascii: "B"), 4, 0, 1]
        message += [0, 0, 0, UInt8(body.count)] + [0, 0, 0, 5] + [0, 0, 0, UInt8(fields.count)]
        message += fields
        while message.count % 8 != 0 { message.append(0) }
        message += body
        try message.withUnsafeBytes { raw throws in
            let view = try WireMessageView(parsing: raw)
            #expect(view.serial == 5)
            #expect(WireMessageView.string(view.path) == "/p")
            #expect(try view.arguments() == [.uint32(0x0102_0304), .string("hi")])
        }
        // libdbus agrees that these bytes are a valid message with the same content.
        let reference = try MessageReference.demarshalling(message)
        #expect(try reference.arguments() == [.uint32(0x0102_0304), .string("hi")])
    }

    /// BlueZ's notification shape, read selectively: keys in order, the wanted values in place, the rest skipped
    /// by length so the argument after the dictionary is still found.
    @Test func variantDictionaryReadsWhatIsAskedAndSkipsTheRest() throws {
        let message = try MessageReference.signal(
            path: "/org/bluez/hci0/dev_00/char0013", interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged", destination: nil)
        try message.append([
            .string("org.bluez.GattCharacteristic1"),
            .dictionary(
                keySignature: "s", valueSignature: "v",
                [
                    DBusDictionaryEntry(key: .string("Nested"), value: .variant(.variantDictionary(["x": .strings(["a"])]))),
                    DBusDictionaryEntry(key: .string("Value"), value: .variant(.bytes([1, 2, 3, 250]))),
                    DBusDictionaryEntry(key: .string("Notifying"), value: .variant(.bool(false))),
                    DBusDictionaryEntry(key: .string("Count"), value: .variant(.uint64(9))),
                ]),
            .strings(["Gone"]),
        ])
        let bytes = try message.marshalled()
        try bytes.withUnsafeBytes { raw throws in
            let view = try WireMessageView(parsing: raw)
            let signal = DBusWireSignal(message: view)
            #expect(signal.hasSignature("sa{sv}as"))
            #expect(!signal.hasSignature("sa{sv}"))
            var body = signal.body
            #expect(try body.readString(equals: "org.bluez.GattCharacteristic1"))
            var keys: [String] = []
            var value: [UInt8] = []
            var notifying: Bool?
            try body.readVariantDictionary { key, variant in
                keys.append(String(decoding: key, as: UTF8.self))
                if DBusWireReader.bytes(key, equal: "Value") { value = Array(try variant.readBytes()) }
                if DBusWireReader.bytes(key, equal: "Notifying") { notifying = try variant.readBool() }
                if DBusWireReader.bytes(key, equal: "Count") { #expect(throws: WireFormatError.self) { try variant.readBool() } }
            }
            #expect(keys == ["Nested", "Value", "Notifying", "Count"])
            #expect(value == [1, 2, 3, 250])
            #expect(notifying == false)
            #expect(try body.readValue(.array(.basic(UInt8(ascii: "s")))) == .strings(["Gone"]))
            #expect(body.isAtEnd)
        }
    }

    @Test func framingNeedsSixteenBytesAndRefusesWhatIsNotDBus() throws {
        let bytes = try WireMessageEncoder.methodCall(
            serial: 1, destination: nil, path: "/", interface: nil, member: "M", arguments: [.string("x")])
        try bytes.withUnsafeBytes { raw throws in
            #expect(try WireMessageView.length(ofMessageStartingWith: UnsafeRawBufferPointer(rebasing: raw[0..<15])) == nil)
            #expect(try WireMessageView.length(ofMessageStartingWith: UnsafeRawBufferPointer(rebasing: raw[0..<16])) == raw.count)
        }
        var wrongOrder = bytes
        wrongOrder[0] = UInt8(ascii: "x")
        var wrongVersion = bytes
        wrongVersion[3] = 2
        var huge = bytes
        huge[4...7] = [0xFF, 0xFF, 0xFF, 0x7F]
        for bad in [wrongOrder, wrongVersion, huge] {
            _ = bad.withUnsafeBytes { raw in
                #expect(throws: WireFormatError.self) { try WireMessageView.length(ofMessageStartingWith: raw) }
            }
        }
    }

    /// Every truncation and thousands of seeded byte mutations of a real notification: each either parses or
    /// throws `WireFormatError`. A trap (out-of-bounds read, overflow) would crash the test process.
    @Test func mutatedMessagesThrowInsteadOfTrapping() throws {
        let message = try MessageReference.signal(
            path: "/org/bluez/hci0/dev_00/char0013", interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged", destination: nil)
        try message.append([
            .string("org.bluez.GattCharacteristic1"),
            .variantDictionary(["Value": .bytes(Array(0..<40)), "Notifying": .bool(true), "N": .structure([.int16(1), .double(2)])]),
            .strings([]),
        ])
        let original = try message.marshalled()
        var parsedCount = 0
        func attempt(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { raw in
                guard let length = try? WireMessageView.length(ofMessageStartingWith: raw), length == raw.count,
                    let view = try? WireMessageView(parsing: raw)
                else { return }
                parsedCount += 1
                _ = try? view.arguments()
                var body = view.body
                _ = try? body.readString(equals: "org.bluez.GattCharacteristic1")
                try? body.readVariantDictionary { _, variant in _ = try? variant.readValue() }
            }
        }
        for length in 0..<original.count {
            attempt(Array(original[0..<length]))
        }
        var generator = SplitMix64(seed: 0x5445_5448)
        for _ in 0..<5000 {
            var mutated = original
            for _ in 0..<Int(generator.next() % 3 + 1) {
                let index = Int(generator.next() % UInt64(mutated.count))
                mutated[index] = UInt8(truncatingIfNeeded: generator.next())
            }
            attempt(mutated)
        }
        attempt(original)
        #expect(parsedCount > 0)
    }

    @Test func nestingDeeperThanTheSpecAllowsIsRefused() throws {
        var value = DBusValue.byte(1)
        for _ in 0..<70 { value = .variant(value) }
        var writer = WireWriter()
        try writer.write(value)
        let bytes = writer.bytes
        try bytes.withUnsafeBytes { raw throws in
            var reader = DBusWireReader(bytes: raw, bigEndian: false, offset: 0, end: raw.count)
            #expect(throws: WireFormatError.self) { try reader.readValue(.variant) }
        }
    }

    @Test func addressesNameTheirSocket() throws {
        #expect(
            try WireTransport.endpoints(in: "unix:path=/tmp/a%20b,guid=00ff")
                == [.path("/tmp/a b")])
        #expect(
            try WireTransport.endpoints(in: "tcp:host=localhost,port=1;unix:abstract=/tmp/dbus-x")
                == [.abstract("/tmp/dbus-x")])
        #expect(throws: DBusError.self) { try WireTransport.endpoints(in: "tcp:host=localhost,port=1") }
        #expect(throws: DBusError.self) { try WireTransport.endpoints(in: "unix:path=/tmp/%zz") }
    }
}

/// A small deterministic generator for the mutation test (the seed makes failures reproducible).
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Messages marshalled by GLib (`Fuzz/make-seeds.py`, GDBusMessage): a third implementation. The wire reader
/// and libdbus must read each one the same way, in both byte orders.
@Suite struct WireCodecGLibSeedTests {
    static let seedDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/seeds/dbus")

    @Test(arguments: ["notification-le", "notification-be", "reply-nested", "error"])
    func glibMessagesReadTheSameAsLibdbusReadsThem(seed: String) throws {
        let bytes = Array(try Data(contentsOf: Self.seedDirectory.appendingPathComponent(seed)))
        let reference = try MessageReference.demarshalling(bytes).arguments()
        try bytes.withUnsafeBytes { raw throws in
            let view = try WireMessageView(parsing: raw)
            #expect(view.serial == 7)
            #expect(try view.arguments() == reference)
        }
    }

    @Test func aStreamOfMessagesFramesIntoEachOne() throws {
        let bytes = Array(try Data(contentsOf: Self.seedDirectory.appendingPathComponent("stream")))
        #expect(bytes.withUnsafeBytes { DBusWireParsingExercise.run($0) } == 4)
    }
}
