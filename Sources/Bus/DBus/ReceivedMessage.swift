internal import CDBus

/// The header of a message read from the connection, copied out of libdbus on the loop thread.
///
/// The body is decoded separately and only when someone wants it: most signals on a busy bus match no
/// subscription and never need their arguments unmarshalled.
struct ReceivedMessage {
    enum Kind {
        case methodCall
        case methodReturn
        case error
        case signal
    }

    let kind: Kind
    let serial: UInt32
    let replySerial: UInt32
    let sender: String?
    let destination: String?
    let path: DBusObjectPath?
    let interface: String?
    let member: String?
    let errorName: String?
    let signature: DBusSignature
    let noReplyExpected: Bool
    private let pointer: OpaquePointer

    /// Reads the header of `pointer`; nil for message types this library does not know.
    ///
    /// The value must not outlive the dispatch of `pointer` (it borrows the message to decode the body lazily).
    init?(borrowing pointer: OpaquePointer) {
        switch dbus_message_get_type(pointer) {
        case CDBUS_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
        case CDBUS_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
        case CDBUS_MESSAGE_TYPE_ERROR: kind = .error
        case CDBUS_MESSAGE_TYPE_SIGNAL: kind = .signal
        default: return nil
        }
        self.pointer = pointer
        serial = dbus_message_get_serial(pointer)
        replySerial = dbus_message_get_reply_serial(pointer)
        sender = Self.string(dbus_message_get_sender(pointer))
        destination = Self.string(dbus_message_get_destination(pointer))
        path = Self.string(dbus_message_get_path(pointer)).map { DBusObjectPath($0) }
        interface = Self.string(dbus_message_get_interface(pointer))
        member = Self.string(dbus_message_get_member(pointer))
        errorName = Self.string(dbus_message_get_error_name(pointer))
        signature = DBusSignature(Self.string(dbus_message_get_signature(pointer)) ?? "")
        noReplyExpected = dbus_message_get_no_reply(pointer) != 0
    }

    /// Unmarshals the body. Unix fds in it are duplicated into values the caller owns.
    func arguments() throws -> [DBusValue] {
        try MessageArgumentReader.readAll(from: pointer)
    }

    /// The first argument when it is a string: an error reply's human-readable message.
    func firstStringArgument() -> String? {
        guard signature.rawValue.hasPrefix("s"), let first = try? arguments().first else { return nil }
        return first.stringValue
    }

    private static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}
