/// Marshals values in little-endian wire format into a growing byte buffer.
///
/// Offsets (and therefore alignment) are relative to the start of the buffer, which is the start of the message.
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    mutating func pad(to alignment: Int) {
        let padded = (bytes.count + alignment - 1) & ~(alignment - 1)
        bytes.append(contentsOf: repeatElement(0, count: padded - bytes.count))
    }

    mutating func write(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func write<Integer: FixedWidthInteger>(_ value: Integer) {
        pad(to: MemoryLayout<Integer>.size)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Overwrites a UINT32 written earlier (an array's length, known only after its elements).
    mutating func patch(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { bytes[offset + index] = byte }
        }
    }

    mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            write(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
        bytes.append(0)
    }

    mutating func writeSignature(_ signature: String) {
        var signature = signature
        signature.withUTF8 { utf8 in
            bytes.append(UInt8(utf8.count))
            bytes.append(contentsOf: utf8)
        }
        bytes.append(0)
    }

    /// Writes an array: its length, the padding to the first element, the elements (`body`), then the length.
    mutating func writeArray(elementAlignment: Int, _ body: (inout WireWriter) throws -> Void) rethrows {
        write(UInt32(0))
        let lengthOffset = bytes.count - 4
        pad(to: elementAlignment)
        let start = bytes.count
        try body(&self)
        patch(UInt32(bytes.count - start), at: lengthOffset)
    }

    /// Writes `value` (already checked by `validateForWire`). Unix fds cannot travel on these connections.
    mutating func write(_ value: DBusValue) throws {
        switch value {
        case .byte(let v): write(v)
        case .bool(let v): write(UInt32(v ? 1 : 0))
        case .int16(let v): write(v)
        case .uint16(let v): write(v)
        case .int32(let v): write(v)
        case .uint32(let v): write(v)
        case .int64(let v): write(v)
        case .uint64(let v): write(v)
        case .double(let v): write(v.bitPattern)
        case .string(let v): writeString(v)
        case .objectPath(let v): writeString(v.rawValue)
        case .signature(let v): writeSignature(v.rawValue)
        case .unixFD:
            throw DBusError(.notSupported, "This connection does not carry Unix file descriptors")
        case .array(let elementSignature, let elements):
            let element = try WireType.parseSingle(elementSignature.rawValue.utf8)
            try writeArray(elementAlignment: element.alignment) { writer in
                for element in elements { try writer.write(element) }
            }
        case .dictionary(_, _, let entries):
            try writeArray(elementAlignment: 8) { writer in
                for entry in entries {
                    writer.pad(to: 8)
                    try writer.write(entry.key)
                    try writer.write(entry.value)
                }
            }
        case .structure(let fields):
            pad(to: 8)
            for field in fields { try write(field) }
        case .variant(let inner):
            writeSignature(inner.signature.rawValue)
            try write(inner)
        }
    }
}
