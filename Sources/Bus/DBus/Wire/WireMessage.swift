/// One received message as it lies in the receive buffer: the header parsed, the body left for whoever wants it.
///
/// Spec, "Message Format": a 12-byte fixed header (byte order, type, flags, version, body length, serial), the
/// header fields `a(yv)`, padding to 8, then the body. The view borrows the buffer: it is valid only while the
/// message is being dispatched.
struct WireMessageView {
    enum Kind: UInt8 {
        case methodCall = 1
        case methodReturn = 2
        case error = 3
        case signal = 4
    }

    /// Spec: "The maximum length of a message, including header, header alignment padding, and body is 2 to
    /// the 27th power or 134217728 (128 MiB)."
    static let maximumLength = 1 << 27

    let bytes: UnsafeRawBufferPointer
    let bigEndian: Bool
    let kind: Kind
    let flags: UInt8
    let serial: UInt32
    private(set) var path: UnsafeRawBufferPointer?
    private(set) var interface: UnsafeRawBufferPointer?
    private(set) var member: UnsafeRawBufferPointer?
    private(set) var errorName: UnsafeRawBufferPointer?
    private(set) var replySerial: UInt32?
    private(set) var destination: UnsafeRawBufferPointer?
    private(set) var sender: UnsafeRawBufferPointer?
    private(set) var signature: UnsafeRawBufferPointer?
    private(set) var unixFDCount: UInt32 = 0
    let bodyStart: Int

    /// The whole message's length from its first 16 bytes, or nil if fewer are available yet.
    static func length(ofMessageStartingWith prefix: UnsafeRawBufferPointer) throws(WireFormatError) -> Int? {
        guard prefix.count >= 16 else { return nil }
        let bigEndian: Bool
        switch prefix[0] {
        case UInt8(ascii: "l"): bigEndian = false
        case UInt8(ascii: "B"): bigEndian = true
        default: throw WireFormatError("byte order mark \(prefix[0]) is neither 'l' nor 'B'")
        }
        guard prefix[3] == 1 else { throw WireFormatError("protocol version \(prefix[3]), not 1") }
        func uint32(at offset: Int) -> Int {
            let raw = prefix.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            return Int(bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw))
        }
        let bodyLength = uint32(at: 4)
        let fieldsLength = uint32(at: 12)
        let headerEnd = (16 + fieldsLength + 7) & ~7
        let total = headerEnd + bodyLength
        guard total <= maximumLength else { throw WireFormatError("a message of \(total) bytes") }
        return total
    }

    /// Parses the header of one whole message (`bytes` is exactly the message).
    init(parsing bytes: UnsafeRawBufferPointer) throws(WireFormatError) {
        guard let length = try Self.length(ofMessageStartingWith: bytes), length == bytes.count else {
            throw WireFormatError("the buffer does not hold exactly one message")
        }
        self.bytes = bytes
        bigEndian = bytes[0] == UInt8(ascii: "B")
        guard let kind = Kind(rawValue: bytes[1]) else { throw WireFormatError("message type \(bytes[1])") }
        self.kind = kind
        flags = bytes[2]
        var fixed = DBusWireReader(bytes: bytes, bigEndian: bigEndian, offset: 4, end: bytes.count)
        let bodyLength = Int(try fixed.readUInt32())
        serial = try fixed.readUInt32()
        guard serial != 0 else { throw WireFormatError("serial 0") }
        var fields = try fixed.enterArray(elementAlignment: 8)
        bodyStart = bytes.count - bodyLength
        while !fields.isAtEnd {
            try fields.align(8)
            let code = try fields.readUInt8()
            let signature = try fields.readSignatureBytes()
            try readField(code, signature: signature, from: &fields)
        }
        try requireFields()
    }

    /// Spec, "Header Fields": codes 1–9 with fixed types; unknown fields must be accepted and ignored.
    private mutating func readField(_ code: UInt8, signature: UnsafeRawBufferPointer, from reader: inout DBusWireReader)
        throws(WireFormatError)
    {
        func expect(_ type: Unicode.Scalar) throws(WireFormatError) {
            guard signature.count == 1, signature[0] == UInt8(type.value) else {
                throw WireFormatError("header field \(code) has signature '\(String(decoding: signature, as: UTF8.self))'")
            }
        }
        switch code {
        case 1: try expect("o"); path = try reader.readStringBytes()
        case 2: try expect("s"); interface = try reader.readStringBytes()
        case 3: try expect("s"); member = try reader.readStringBytes()
        case 4: try expect("s"); errorName = try reader.readStringBytes()
        case 5: try expect("u"); replySerial = try reader.readUInt32()
        case 6: try expect("s"); destination = try reader.readStringBytes()
        case 7: try expect("s"); sender = try reader.readStringBytes()
        case 8: try expect("g"); self.signature = try reader.readSignatureBytes()
        case 9: try expect("u"); unixFDCount = try reader.readUInt32()
        default: try reader.skipValue(try WireType.parseSingle(signature))
        }
    }

    /// Spec: the header fields each message type requires.
    private func requireFields() throws(WireFormatError) {
        switch kind {
        case .methodCall:
            guard path != nil, member != nil else { throw WireFormatError("a method call without PATH or MEMBER") }
        case .signal:
            guard path != nil, interface != nil, member != nil else {
                throw WireFormatError("a signal without PATH, INTERFACE or MEMBER")
            }
        case .error:
            guard errorName != nil, replySerial != nil else {
                throw WireFormatError("an error without ERROR_NAME or REPLY_SERIAL")
            }
        case .methodReturn:
            guard replySerial != nil else { throw WireFormatError("a method return without REPLY_SERIAL") }
        }
    }

    /// A reader positioned at the start of the body.
    var body: DBusWireReader {
        DBusWireReader(bytes: bytes, bigEndian: bigEndian, offset: bodyStart, end: bytes.count)
    }

    /// The whole body as `DBusValue`s, per the SIGNATURE field.
    func arguments() throws(WireFormatError) -> [DBusValue] {
        guard let signature, !signature.isEmpty else { return [] }
        var reader = body
        var values: [DBusValue] = []
        for type in try WireType.parseList(signature) {
            values.append(try reader.readValue(type))
        }
        return values
    }

    static func string(_ field: UnsafeRawBufferPointer?) -> String? {
        field.map { String(decoding: $0, as: UTF8.self) }
    }

    static func field(_ field: UnsafeRawBufferPointer?, equals expected: [UInt8]) -> Bool {
        guard let field else { return false }
        return expected.withUnsafeBytes { DBusWireReader.same($0, field) }
    }
}

/// Builds outgoing messages in little-endian wire format.
enum WireMessageEncoder {
    /// Spec: NO_REPLY_EXPECTED.
    static let noReplyExpected: UInt8 = 0x1

    static func methodCall(
        serial: UInt32, destination: String?, path: DBusObjectPath, interface: String?, member: String,
        arguments: [DBusValue], flags: UInt8 = 0
    ) throws -> [UInt8] {
        try WireNames.requirePath(path)
        try WireNames.requireMember(member)
        if let interface { try WireNames.requireInterface(interface) }
        if let destination { try WireNames.requireBusName(destination) }
        var fields: [(UInt8, DBusValue)] = [(1, .objectPath(path))]
        if let interface { fields.append((2, .string(interface))) }
        fields.append((3, .string(member)))
        if let destination { fields.append((6, .string(destination))) }
        return try encode(.methodCall, flags: flags, serial: serial, fields: fields, arguments: arguments)
    }

    /// A method return (`errorName` nil) or an error reply to a call this connection received.
    static func reply(
        serial: UInt32, replySerial: UInt32, destination: String?, errorName: String? = nil, arguments: [DBusValue] = []
    ) throws -> [UInt8] {
        var fields: [(UInt8, DBusValue)] = [(5, .uint32(replySerial))]
        if let errorName { fields.append((4, .string(errorName))) }
        if let destination { fields.append((6, .string(destination))) }
        return try encode(
            errorName == nil ? .methodReturn : .error, flags: noReplyExpected, serial: serial, fields: fields,
            arguments: arguments)
    }

    private static func encode(
        _ kind: WireMessageView.Kind, flags: UInt8, serial: UInt32, fields: [(UInt8, DBusValue)], arguments: [DBusValue]
    ) throws -> [UInt8] {
        var body = WireWriter()
        // The body starts 8-aligned in the message, so marshalling it on its own gives the same padding.
        for argument in arguments {
            try argument.validateForWire()
            try body.write(argument)
        }
        let signature = arguments.map(\.signature.rawValue).joined()
        var header = fields
        if !signature.isEmpty { header.append((8, .signature(DBusSignature(signature)))) }

        var message = WireWriter(capacity: 128 + body.bytes.count)
        message.write(UInt8(ascii: "l"))
        message.write(kind.rawValue)
        message.write(flags)
        message.write(UInt8(1))
        message.write(UInt32(body.bytes.count))
        message.write(serial)
        try message.writeArray(elementAlignment: 8) { writer in
            for (code, value) in header {
                writer.pad(to: 8)
                writer.write(code)
                try writer.write(DBusValue.variant(value))
            }
        }
        message.pad(to: 8)
        return message.bytes + body.bytes
    }
}
