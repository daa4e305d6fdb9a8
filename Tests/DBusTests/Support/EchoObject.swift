import DBus
import Glibc
import Synchronization

/// The Tether object that external peers call in these tests: `com.example.Echo` at `/test`.
///
/// It records what it received so a test can assert on the values Tether decoded, not only on what the peer
/// printed after the round trip.
final class EchoObject: Sendable {
    static let path: DBusObjectPath = "/test"
    static let interfaceName = "com.example.Echo"

    /// The full signature of `Typed`: every basic type and the common containers, as top-level arguments.
    static let typedSignatures: [DBusSignature] = [
        "y", "b", "n", "q", "i", "u", "x", "t", "d", "s", "o", "g", "as", "a{sv}", "(is)", "a{qv}", "aay", "v",
    ]

    private let received = Mutex<[String: DBusValue]>([:])
    private let typedArguments = Mutex<[DBusValue]?>(nil)

    /// What Echo received, by case name.
    var echoed: [String: DBusValue] { received.withLock { $0 } }
    /// What Typed received.
    var typed: [DBusValue]? { typedArguments.withLock { $0 } }

    var interface: DBusInterface {
        DBusInterface(
            name: Self.interfaceName,
            methods: [
                DBusMethod("Echo", inputs: [DBusArgument("name", "s"), DBusArgument("value", "v")],
                           outputs: [DBusArgument("value", "v")]) { [self] call in
                    if let name = call.arguments[0].stringValue {
                        received.withLock { $0[name] = call.arguments[1] }
                    }
                    return [call.arguments[1]]
                },
                DBusMethod(
                    "Typed",
                    inputs: Self.typedSignatures.map { DBusArgument(nil, $0) },
                    outputs: Self.typedSignatures.map { DBusArgument(nil, $0) }
                ) { [self] call in
                    typedArguments.withLock { $0 = call.arguments }
                    return call.arguments
                },
                DBusMethod("Refuse") { _ in
                    throw DBusError(name: "org.bluez.Error.InProgress", message: "Busy right now")
                },
                // Like BlueZ's AcquireNotify: one end of a SOCK_SEQPACKET pair and an MTU; packets keep boundaries.
                DBusMethod("Acquire", outputs: [DBusArgument("fd", "h"), DBusArgument("mtu", "q")]) { _ in
                    let (ours, theirs) = try SocketPair.make(type: SOCK_SEQPACKET)
                    try ours.send("first")
                    try ours.send("second")
                    return [.unixFD(theirs), .uint16(23)]
                },
            ],
            signals: [DBusSignalDeclaration("Echoed", arguments: [DBusArgument("value", "v")])]
        )
    }
}

/// A connected pair of Unix sockets, both ends owned.
enum SocketPair {
    static func make(type: __socket_type = SOCK_STREAM) throws -> (OwnedFileDescriptor, OwnedFileDescriptor) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw DBusError(.failed, "socketpair failed: \(errno)")
        }
        return (OwnedFileDescriptor(taking: pair[0]), OwnedFileDescriptor(taking: pair[1]))
    }
}

extension OwnedFileDescriptor {
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        let written = withDescriptor { write($0, bytes, bytes.count) } ?? -1
        guard written == bytes.count else { throw DBusError(.ioError, "write failed") }
    }

    /// One read of up to 256 bytes (a packet, for SOCK_SEQPACKET); blocks until data or EOF.
    func receive() throws -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = withDescriptor { read($0, &buffer, buffer.count) } ?? -1
        guard count >= 0 else { throw DBusError(.ioError, "read failed") }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }
}
