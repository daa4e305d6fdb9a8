internal import CDBus

/// Marshals `DBusValue`s into a libdbus message body through `DBusMessageIter`.
///
/// Everything is validated before the first byte is appended, because libdbus aborts the process on a type
/// mismatch inside a container; after validation the only failure left is running out of memory.
enum MessageArgumentWriter {
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws {
        for value in values {
            try value.validateForWire()
        }
        let body = DBusSignature(concatenating: values.map(\.signature))
        guard body.isValid else {
            throw DBusError(.invalidSignature, "Message body signature '\(body.rawValue)' exceeds D-Bus limits")
        }
        let iterator = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { iterator.deallocate() }
        dbus_message_iter_init_append(message, iterator)
        for value in values {
            try append(value, to: iterator)
        }
    }

    private static func append(_ value: DBusValue, to iterator: UnsafeMutablePointer<DBusMessageIter>) throws {
        switch value {
        case .byte(let v): try appendBasic(v, type: CDBUS_TYPE_BYTE, to: iterator)
        case .bool(let v): try appendBasic(dbus_bool_t(v ? 1 : 0), type: CDBUS_TYPE_BOOLEAN, to: iterator)
        case .int16(let v): try appendBasic(v, type: CDBUS_TYPE_INT16, to: iterator)
        case .uint16(let v): try appendBasic(v, type: CDBUS_TYPE_UINT16, to: iterator)
        case .int32(let v): try appendBasic(v, type: CDBUS_TYPE_INT32, to: iterator)
        case .uint32(let v): try appendBasic(v, type: CDBUS_TYPE_UINT32, to: iterator)
        case .int64(let v): try appendBasic(v, type: CDBUS_TYPE_INT64, to: iterator)
        case .uint64(let v): try appendBasic(v, type: CDBUS_TYPE_UINT64, to: iterator)
        case .double(let v): try appendBasic(v, type: CDBUS_TYPE_DOUBLE, to: iterator)
        case .string(let v): try appendString(v, type: CDBUS_TYPE_STRING, to: iterator)
        case .objectPath(let v): try appendString(v.rawValue, type: CDBUS_TYPE_OBJECT_PATH, to: iterator)
        case .signature(let v): try appendString(v.rawValue, type: CDBUS_TYPE_SIGNATURE, to: iterator)
        case .unixFD(let descriptor):
            // libdbus duplicates the descriptor; holding the lock keeps a concurrent close() from racing it.
            let appended: Void? = try descriptor.withDescriptor { fd in
                try appendBasic(fd, type: CDBUS_TYPE_UNIX_FD, to: iterator)
            }
            guard appended != nil else {
                throw DBusError(.invalidArgs, "Cannot send a file descriptor that was already closed or taken")
            }
        case .array(let elementSignature, let elements):
            try withContainer(CDBUS_TYPE_ARRAY, signature: elementSignature.rawValue, in: iterator) { sub in
                if elementSignature == "y" {
                    try appendByteArray(elements, to: sub)
                } else {
                    for element in elements {
                        try append(element, to: sub)
                    }
                }
            }
        case .dictionary(let keySignature, let valueSignature, let entries):
            let entrySignature = "{" + keySignature.rawValue + valueSignature.rawValue + "}"
            try withContainer(CDBUS_TYPE_ARRAY, signature: entrySignature, in: iterator) { array in
                for entry in entries {
                    try withContainer(CDBUS_TYPE_DICT_ENTRY, signature: nil, in: array) { pair in
                        try append(entry.key, to: pair)
                        try append(entry.value, to: pair)
                    }
                }
            }
        case .structure(let fields):
            try withContainer(CDBUS_TYPE_STRUCT, signature: nil, in: iterator) { sub in
                for field in fields {
                    try append(field, to: sub)
                }
            }
        case .variant(let inner):
            try withContainer(CDBUS_TYPE_VARIANT, signature: inner.signature.rawValue, in: iterator) { sub in
                try append(inner, to: sub)
            }
        }
    }

    private static func appendBasic<Value: BitwiseCopyable>(
        _ value: Value,
        type: Int32,
        to iterator: UnsafeMutablePointer<DBusMessageIter>
    ) throws {
        var copy = value
        guard dbus_message_iter_append_basic(iterator, type, &copy) != 0 else {
            throw outOfMemory
        }
    }

    /// String-like basics are passed to libdbus as a pointer to a `const char *`.
    private static func appendString(
        _ string: String,
        type: Int32,
        to iterator: UnsafeMutablePointer<DBusMessageIter>
    ) throws {
        let appended = string.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            return dbus_message_iter_append_basic(iterator, type, &pointer)
        }
        guard appended != 0 else { throw outOfMemory }
    }

    /// `ay` in one copy instead of one call per byte (BLE payloads travel as `ay`).
    private static func appendByteArray(
        _ elements: [DBusValue],
        to iterator: UnsafeMutablePointer<DBusMessageIter>
    ) throws {
        guard !elements.isEmpty else { return }
        let bytes = elements.compactMap(\.byteValue)
        guard bytes.count == elements.count else {
            throw DBusError(.invalidArgs, "An 'ay' array holds a value that is not a byte")
        }
        let appended = bytes.withUnsafeBufferPointer { buffer in
            var base = buffer.baseAddress
            return dbus_message_iter_append_fixed_array(iterator, CDBUS_TYPE_BYTE, &base, Int32(buffer.count))
        }
        guard appended != 0 else { throw outOfMemory }
    }

    private static func withContainer(
        _ type: Int32,
        signature: String?,
        in iterator: UnsafeMutablePointer<DBusMessageIter>,
        _ body: (UnsafeMutablePointer<DBusMessageIter>) throws -> Void
    ) throws {
        let sub = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { sub.deallocate() }
        let opened = withOptionalCString(signature) { dbus_message_iter_open_container(iterator, type, $0, sub) }
        guard opened != 0 else { throw outOfMemory }
        do {
            try body(sub)
        } catch {
            dbus_message_iter_abandon_container(iterator, sub)
            throw error
        }
        guard dbus_message_iter_close_container(iterator, sub) != 0 else {
            throw outOfMemory
        }
    }

    private static let outOfMemory = DBusError(.noMemory, "libdbus could not grow the message")
}
