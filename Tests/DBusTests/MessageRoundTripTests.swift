import Glibc
import Testing

@testable import DBus

/// Marshals values into a real libdbus message and reads them back, without a bus: the Swift writer and reader
/// must be exact inverses for every type, including empty containers and the `ay` fast path.
@Suite struct MessageRoundTripTests {
    static let values: [DBusValue] = [
        .byte(0), .byte(255), .bool(false), .bool(true),
        .int16(.min), .int16(.max), .uint16(.max), .int32(.min), .uint32(.max), .int64(.min), .uint64(.max),
        .double(-0.0), .double(.greatestFiniteMagnitude), .double(.infinity),
        .string(""), .string("h\u{e9}llo \u{2713} \u{1F600}"),
        .objectPath("/"), .objectPath("/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF"),
        .signature(""), .signature("a{oa{sa{sv}}}"),
        .array(elementSignature: "s", []), .array(elementSignature: "(ii)", []), .array(elementSignature: "ay", []),
        .bytes([]), .bytes([0, 1, 254, 255]), .bytes(Array(repeating: 0xAB, count: 4096)),
        .strings(["a", "", "c"]),
        .array(elementSignature: "v", [.variant(.int16(1)), .variant(.string("two"))]),
        .dictionary(keySignature: "s", valueSignature: "v", []),
        .variantDictionary(["Name": .string("x"), "RSSI": .int16(-60), "UUIDs": .strings(["180d"])]),
        .dictionary(
            keySignature: "q", valueSignature: "v",
            [DBusDictionaryEntry(key: .uint16(0x004C), value: .variant(.bytes([2, 21])))]),
        .dictionary(
            keySignature: "o", valueSignature: "a{sa{sv}}",
            [DBusDictionaryEntry(
                key: .objectPath("/a"),
                value: .dictionary(
                    keySignature: "s", valueSignature: "a{sv}",
                    [DBusDictionaryEntry(key: .string("i.f"), value: .variantDictionary([:]))]))]),
        .structure([.int32(1)]),
        .structure([.byte(1), .structure([.string("nested"), .array(elementSignature: "u", [])])]),
        .variant(.variant(.variant(.bool(true)))),
        .variant(.array(elementSignature: "a{sv}", [.variantDictionary(["k": .double(2.5)])])),
    ]

    @Test func everyTypeSurvivesARoundTrip() throws {
        let message = try MessageReference.methodCall(destination: nil, path: "/a", interface: nil, member: "M")
        try message.append(Self.values)
        let decoded = try message.arguments()
        #expect(decoded.count == Self.values.count)
        for (sent, received) in zip(Self.values, decoded) {
            if case .double(let d) = sent, d.isNaN { continue }
            #expect(sent == received)
            #expect(sent.signature == received.signature)
        }
    }

    @Test func emptyBodyDecodesToNoArguments() throws {
        let message = try MessageReference.methodCall(destination: nil, path: "/a", interface: nil, member: "M")
        #expect(try message.arguments().isEmpty)
    }

    @Test func unixFDsAreDuplicatedBothWays() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let sent = OwnedFileDescriptor(taking: pair[0])
        let other = OwnedFileDescriptor(taking: pair[1])
        let message = try MessageReference.methodCall(destination: nil, path: "/a", interface: nil, member: "M")
        try message.append([.unixFD(sent)])
        let decoded = try message.arguments()
        guard case .unixFD(let received)? = decoded.first, let receivedFD = received.rawValue else {
            Issue.record("no descriptor decoded: \(decoded)")
            return
        }
        #expect(receivedFD != pair[0], "the reader hands out its own duplicate")
        sent.close()
        // The duplicate still reaches the socket after the original is closed.
        let payload: [UInt8] = Array("ping".utf8)
        #expect(write(receivedFD, payload, payload.count) == payload.count)
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = other.withDescriptor { read($0, &buffer, buffer.count) } ?? -1
        #expect(Array(buffer.prefix(max(count, 0))) == payload)
    }

    @Test func ownedDescriptorCanBeTakenOnce() throws {
        let descriptor = try OwnedFileDescriptor(duplicating: STDIN_FILENO)
        let raw = descriptor.take()
        #expect(raw != nil)
        #expect(descriptor.take() == nil)
        #expect(descriptor.rawValue == nil)
        if let raw { close(raw) }
    }
}
