import TetherPrimitives

/// The 8-byte SMP header, big-endian (Zephyr "SMP Protocol Specification", "SMP message"):
///
///     byte 0    Res (3 bits) | Ver (2 bits) | OP (3 bits)
///     byte 1    flags
///     bytes 2-3 length of the CBOR body
///     bytes 4-5 group id
///     byte 6    sequence number (echoed by the response)
///     byte 7    command id
public struct SMPHeader: Hashable, Sendable {
    public static let size = 8

    public var version: SMPVersion
    public var operation: SMPOperation
    public var flags: UInt8
    public var length: UInt16
    public var group: UInt16
    public var sequence: UInt8
    public var command: UInt8

    public init(
        version: SMPVersion, operation: SMPOperation, flags: UInt8 = 0, length: UInt16, group: UInt16, sequence: UInt8,
        command: UInt8
    ) {
        self.version = version
        self.operation = operation
        self.flags = flags
        self.length = length
        self.group = group
        self.sequence = sequence
        self.command = command
    }

    /// Reads a header from the first 8 bytes; nil when there are fewer. Throws for reserved bits set, a version
    /// this client does not know (2 and 3 are reserved) and can never be resynchronised to.
    public init?(_ bytes: some Collection<UInt8>) throws(SMPDecodeError) {
        var reader = ByteReader(Array(bytes.prefix(Self.size)))
        guard reader.remaining == Self.size, let first = reader.readUInt8(), let flags = reader.readUInt8(),
            let length = reader.readUInt16(.big), let group = reader.readUInt16(.big), let sequence = reader.readUInt8(),
            let command = reader.readUInt8()
        else { return nil }
        // "Res" is reserved: a set bit means this is not an SMP header we understand.
        guard first & 0xE0 == 0 else { throw SMPDecodeError(.reservedBitsSet, at: 0) }
        guard let version = SMPVersion(rawValue: (first >> 3) & 0x03) else { throw SMPDecodeError(.unknownVersion, at: 0) }
        guard let operation = SMPOperation(rawValue: first & 0x07) else { throw SMPDecodeError(.unknownOperation, at: 0) }
        self.init(version: version, operation: operation, flags: flags, length: length, group: group, sequence: sequence, command: command)
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.write(version.rawValue << 3 | operation.rawValue)
        writer.write(flags)
        writer.write(length, .big)
        writer.write(group, .big)
        writer.write(sequence)
        writer.write(command)
        return writer.bytes
    }
}

/// The header's 2-bit version field: 0 for the original (legacy) protocol, 1 for SMP version 2, whose responses
/// carry group errors as `err: {group, rc}` (Zephyr "SMP Protocol Specification", "Minimal response").
public enum SMPVersion: UInt8, Hashable, Sendable, CaseIterable {
    case v1 = 0
    case v2 = 1
}

/// The header's OP field.
public enum SMPOperation: UInt8, Hashable, Sendable, CaseIterable {
    case read = 0
    case readResponse = 1
    case write = 2
    case writeResponse = 3

    public var isResponse: Bool { self == .readResponse || self == .writeResponse }

    /// The operation a device answers this request with.
    public var response: SMPOperation {
        switch self {
        case .read, .readResponse: .readResponse
        case .write, .writeResponse: .writeResponse
        }
    }
}

/// Management group ids (Zephyr "SMP Protocol Specification", "Specifications of management groups supported by
/// Zephyr"): only the groups this client speaks.
public enum SMPGroup {
    public static let os: UInt16 = 0
    public static let image: UInt16 = 1
}

/// Command ids within the OS group (Zephyr "SMP OS management group").
public enum SMPOSCommand {
    public static let echo: UInt8 = 0
    public static let reset: UInt8 = 5
    public static let parameters: UInt8 = 6
    public static let bootloaderInfo: UInt8 = 8
}

/// Command ids within the image group (Zephyr "SMP Application/software image management group").
public enum SMPImageCommand {
    public static let state: UInt8 = 0
    public static let upload: UInt8 = 1
    public static let erase: UInt8 = 5
}
