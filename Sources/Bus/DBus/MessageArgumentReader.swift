internal import CDBus

/// Unmarshals a libdbus message body into `DBusValue`s through `DBusMessageIter`.
///
/// libdbus has already validated the message (types, nesting, UTF-8) when it was received, so unexpected input
/// here means a libdbus/typing mismatch; it is reported as `.inconsistentMessage`, never trapped on.
/// Unix fds come back from libdbus as fresh duplicates owned by the returned values.
enum MessageArgumentReader {
    static func readAll(from message: OpaquePointer) throws -> [DBusValue] {
        let iterator = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { iterator.deallocate() }
        guard dbus_message_iter_init(message, iterator) != 0 else {
            return []
        }
        return try readSiblings(iterator)
    }

    /// Reads values from the iterator's position to the end of its container.
    private static func readSiblings(_ iterator: UnsafeMutablePointer<DBusMessageIter>) throws -> [DBusValue] {
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(iterator) != CDBUS_TYPE_INVALID {
            values.append(try read(iterator))
            dbus_message_iter_next(iterator)
        }
        return values
    }

    private static func read(_ iterator: UnsafeMutablePointer<DBusMessageIter>) throws -> DBusValue {
        let type = dbus_message_iter_get_arg_type(iterator)
        switch type {
        case CDBUS_TYPE_BYTE: return .byte(basic(iterator, initial: 0))
        case CDBUS_TYPE_BOOLEAN: return .bool(basic(iterator, initial: dbus_bool_t(0)) != 0)
        case CDBUS_TYPE_INT16: return .int16(basic(iterator, initial: 0))
        case CDBUS_TYPE_UINT16: return .uint16(basic(iterator, initial: 0))
        case CDBUS_TYPE_INT32: return .int32(basic(iterator, initial: 0))
        case CDBUS_TYPE_UINT32: return .uint32(basic(iterator, initial: 0))
        case CDBUS_TYPE_INT64: return .int64(basic(iterator, initial: 0))
        case CDBUS_TYPE_UINT64: return .uint64(basic(iterator, initial: 0))
        case CDBUS_TYPE_DOUBLE: return .double(basic(iterator, initial: 0))
        case CDBUS_TYPE_STRING: return .string(try string(iterator))
        case CDBUS_TYPE_OBJECT_PATH: return .objectPath(DBusObjectPath(try string(iterator)))
        case CDBUS_TYPE_SIGNATURE: return .signature(DBusSignature(try string(iterator)))
        case CDBUS_TYPE_UNIX_FD:
            // libdbus returns a new duplicate that the caller owns, or -1 if the transport could not carry fds.
            let fd: Int32 = basic(iterator, initial: -1)
            guard fd >= 0 else {
                throw DBusError(.inconsistentMessage, "The message names a Unix fd that was not received")
            }
            return .unixFD(OwnedFileDescriptor(taking: fd))
        case CDBUS_TYPE_ARRAY:
            return try array(iterator)
        case CDBUS_TYPE_STRUCT:
            let fields = try withSubIterator(iterator) { try readSiblings($0) }
            guard !fields.isEmpty else {
                throw DBusError(.inconsistentMessage, "Received an empty struct")
            }
            return .structure(fields)
        case CDBUS_TYPE_VARIANT:
            let inner = try withSubIterator(iterator) { try readSiblings($0) }
            guard inner.count == 1, let value = inner.first else {
                throw DBusError(.inconsistentMessage, "Received a variant holding \(inner.count) values")
            }
            return .variant(value)
        default:
            throw DBusError(.inconsistentMessage, "Received unsupported D-Bus type code \(type)")
        }
    }

    private static func array(_ iterator: UnsafeMutablePointer<DBusMessageIter>) throws -> DBusValue {
        // The complete array type, e.g. "a{sv}", gives the element types even when the array is empty.
        let arraySignature = try currentSignature(iterator)
        guard arraySignature.hasPrefix("a") else {
            throw DBusError(.inconsistentMessage, "Array with signature '\(arraySignature)'")
        }
        let elementSignature = String(arraySignature.dropFirst())
        let elementType = dbus_message_iter_get_element_type(iterator)

        if elementType == CDBUS_TYPE_DICT_ENTRY {
            // "{kv}": the key is a single basic type code, the value is the rest up to the closing brace.
            guard elementSignature.hasPrefix("{"), elementSignature.hasSuffix("}"), elementSignature.count >= 4 else {
                throw DBusError(.inconsistentMessage, "Dictionary with signature '\(arraySignature)'")
            }
            let inner = elementSignature.dropFirst().dropLast()
            let keySignature = DBusSignature(String(inner.prefix(1)))
            let valueSignature = DBusSignature(String(inner.dropFirst()))
            let entries = try withSubIterator(iterator) { entriesIterator -> [DBusDictionaryEntry] in
                var entries: [DBusDictionaryEntry] = []
                while dbus_message_iter_get_arg_type(entriesIterator) == CDBUS_TYPE_DICT_ENTRY {
                    let pair = try withSubIterator(entriesIterator) { try readSiblings($0) }
                    guard pair.count == 2 else {
                        throw DBusError(.inconsistentMessage, "Dictionary entry with \(pair.count) values")
                    }
                    entries.append(DBusDictionaryEntry(key: pair[0], value: pair[1]))
                    dbus_message_iter_next(entriesIterator)
                }
                return entries
            }
            return .dictionary(keySignature: keySignature, valueSignature: valueSignature, entries)
        }

        if elementType == CDBUS_TYPE_BYTE {
            let bytes = withSubIterator(iterator) { byteIterator -> [UInt8] in
                var base: UnsafeRawPointer?
                var count: Int32 = 0
                withUnsafeMutablePointer(to: &base) { dbus_message_iter_get_fixed_array(byteIterator, $0, &count) }
                guard let base, count > 0 else { return [] }
                return Array(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: Int(count)))
            }
            return .bytes(bytes)
        }

        let elements = try withSubIterator(iterator) { try readSiblings($0) }
        return .array(elementSignature: DBusSignature(elementSignature), elements)
    }

    private static func basic<Value: BitwiseCopyable>(
        _ iterator: UnsafeMutablePointer<DBusMessageIter>,
        initial: Value
    ) -> Value {
        var value = initial
        dbus_message_iter_get_basic(iterator, &value)
        return value
    }

    private static func string(_ iterator: UnsafeMutablePointer<DBusMessageIter>) throws -> String {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(iterator, &pointer)
        guard let pointer, let string = String(validatingCString: pointer) else {
            throw DBusError(.inconsistentMessage, "Received a string that is not valid UTF-8")
        }
        return string
    }

    private static func currentSignature(_ iterator: UnsafeMutablePointer<DBusMessageIter>) throws -> String {
        guard let signature = dbus_message_iter_get_signature(iterator) else {
            throw DBusError(.noMemory, "libdbus could not allocate a signature")
        }
        defer { dbus_free(signature) }
        return String(cString: signature)
    }

    private static func withSubIterator<Result>(
        _ iterator: UnsafeMutablePointer<DBusMessageIter>,
        _ body: (UnsafeMutablePointer<DBusMessageIter>) throws -> Result
    ) rethrows -> Result {
        let sub = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { sub.deallocate() }
        dbus_message_iter_recurse(iterator, sub)
        return try body(sub)
    }
}
