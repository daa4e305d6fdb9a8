internal import CDBus

/// Owns one reference to a libdbus `DBusMessage` and drops it in `deinit`, so no path can leak a message.
///
/// A message is built on one thread and then handed, whole, to the connection's loop thread to be sent; it is
/// never touched by two threads at once, which is what makes the unchecked `Sendable` sound. (libdbus itself
/// is thread-safe by default since 1.7, so creating messages off the loop thread is allowed.)
final class MessageReference: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Adopts a reference the caller already holds (e.g. from `dbus_message_new_*`).
    private init(adopting pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        dbus_message_unref(pointer)
    }

    static func methodCall(
        destination: String?,
        path: DBusObjectPath,
        interface: String?,
        member: String
    ) throws -> MessageReference {
        if let destination { try WireNames.requireBusName(destination) }
        try WireNames.requirePath(path)
        if let interface { try WireNames.requireInterface(interface) }
        try WireNames.requireMember(member)
        let created = path.rawValue.withCString { cPath in
            member.withCString { cMember in
                withOptionalCString(destination) { cDestination in
                    withOptionalCString(interface) { cInterface in
                        dbus_message_new_method_call(cDestination, cPath, cInterface, cMember)
                    }
                }
            }
        }
        return try adopt(created)
    }

    static func signal(path: DBusObjectPath, interface: String, member: String, destination: String?) throws
        -> MessageReference
    {
        try WireNames.requirePath(path)
        try WireNames.requireInterface(interface)
        try WireNames.requireMember(member)
        if let destination { try WireNames.requireBusName(destination) }
        let created = path.rawValue.withCString { cPath in
            interface.withCString { cInterface in
                member.withCString { cMember in dbus_message_new_signal(cPath, cInterface, cMember) }
            }
        }
        let message = try adopt(created)
        if let destination { try message.setDestination(destination) }
        return message
    }

    /// The message in wire format as libdbus marshals it (serial set to `serial`): the reference the
    /// wire-protocol reader is tested against.
    func marshalled(serial: UInt32 = 1) throws -> [UInt8] {
        dbus_message_set_serial(pointer, serial)
        var bytes: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(pointer, &bytes, &length) != 0, let bytes else {
            throw DBusError(.noMemory, "libdbus could not marshal the message")
        }
        defer { dbus_free(bytes) }
        return Array(UnsafeRawBufferPointer(start: bytes, count: Int(length)))
    }

    /// A message parsed (and validated) by libdbus from wire-format bytes: the reference the wire-protocol
    /// writer is tested against.
    static func demarshalling(_ bytes: [UInt8]) throws -> MessageReference {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let parsed = bytes.withUnsafeBytes {
            dbus_message_demarshal($0.baseAddress?.assumingMemoryBound(to: CChar.self), Int32($0.count), &error)
        }
        guard let parsed else {
            let reason = error.message.map { String(cString: $0) } ?? "unknown reason"
            throw DBusError(.inconsistentMessage, "libdbus rejected the bytes: \(reason)")
        }
        return MessageReference(adopting: parsed)
    }

    /// A method return for the call with `serial` from `sender`.
    static func methodReturn(toSerial serial: UInt32, destination: String?) throws -> MessageReference {
        let message = try adopt(dbus_message_new(CDBUS_MESSAGE_TYPE_METHOD_RETURN))
        try message.prepareReply(toSerial: serial, destination: destination)
        return message
    }

    /// An error reply for the call with `serial` from `sender`; the message text is the single string argument.
    static func errorReply(toSerial serial: UInt32, destination: String?, error: DBusError) throws -> MessageReference {
        try WireNames.requireErrorName(error.name)
        let message = try adopt(dbus_message_new(CDBUS_MESSAGE_TYPE_ERROR))
        let named = error.name.withCString { dbus_message_set_error_name(message.pointer, $0) }
        guard named != 0 else { throw outOfMemory }
        try message.prepareReply(toSerial: serial, destination: destination)
        // A message with a NUL cannot be marshalled; keep the text up to it rather than lose the reply.
        let text = String(error.message.prefix { $0 != "\0" })
        try message.append([.string(text)])
        return message
    }

    /// The message body, read while this reference holds the message. Reading through a bare `pointer` taken from a
    /// temporary (`MessageReference.demarshalling(bytes).pointer`) let Swift release the message first: libdbus then
    /// read freed memory, another message's, and aborted ("dbus message changed byte order since iterator was
    /// created"), once in seven test runs.
    func arguments() throws -> [DBusValue] {
        try MessageArgumentReader.readAll(from: pointer)
    }

    /// Appends the message body, after checking every value (libdbus aborts on malformed input).
    func append(_ arguments: [DBusValue]) throws {
        try MessageArgumentWriter.append(arguments, to: pointer)
    }

    /// Marks a message the sender does not want a reply to (replies, signals, fire-and-forget calls).
    func setNoReply() {
        dbus_message_set_no_reply(pointer, 1)
    }

    var containsUnixFDs: Bool {
        dbus_message_contains_unix_fds(pointer) != 0
    }

    private func prepareReply(toSerial serial: UInt32, destination: String?) throws {
        guard dbus_message_set_reply_serial(pointer, serial) != 0 else { throw Self.outOfMemory }
        setNoReply()
        if let destination { try setDestination(destination) }
    }

    private func setDestination(_ destination: String) throws {
        try WireNames.requireBusName(destination)
        guard destination.withCString({ dbus_message_set_destination(pointer, $0) }) != 0 else {
            throw Self.outOfMemory
        }
    }

    private static func adopt(_ pointer: OpaquePointer?) throws -> MessageReference {
        guard let pointer else { throw outOfMemory }
        return MessageReference(adopting: pointer)
    }

    private static let outOfMemory = DBusError(.noMemory, "libdbus could not allocate a message")
}

/// Calls `body` with a C string for `string`, or with nil.
func withOptionalCString<Result>(_ string: String?, _ body: (UnsafePointer<CChar>?) throws -> Result) rethrows
    -> Result
{
    guard let string else { return try body(nil) }
    return try string.withCString { try body($0) }
}
