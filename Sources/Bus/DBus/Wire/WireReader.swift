import Glibc

/// A bounds-checked cursor over one marshalled message, reading values as the spec lays them out.
///
/// Offsets are relative to the start of the message, which is what alignment is relative to (spec: "the
/// alignment is relative to the start of the message"; the body starts on an 8-byte boundary, so reading the
/// body with message offsets aligns it correctly). Every read checks the bounds first and throws
/// `WireFormatError` instead of trapping: the bytes come from another process.
///
/// The reader borrows the message's memory: use it, and anything it returns as a raw buffer, only while the
/// message is being dispatched.
public struct DBusWireReader {
    let bytes: UnsafeRawBufferPointer
    let bigEndian: Bool
    /// The next byte to read.
    private(set) var offset: Int
    /// One past the last byte this reader may read (the end of the body, or of the enclosing array).
    let end: Int

    init(bytes: UnsafeRawBufferPointer, bigEndian: Bool, offset: Int, end: Int) {
        self.bytes = bytes
        self.bigEndian = bigEndian
        self.offset = offset
        self.end = end
    }

    /// Whether everything up to the end has been read.
    public var isAtEnd: Bool { offset >= end }

    // MARK: Fixed-size values

    mutating func align(_ alignment: Int) throws(WireFormatError) {
        let padded = (offset + alignment - 1) & ~(alignment - 1)
        guard padded <= end else { throw WireFormatError("padding runs past the end") }
        // Spec: padding bytes must be zero; libdbus and dbus-daemon reject messages that break this.
        for index in offset..<padded where bytes[index] != 0 {
            throw WireFormatError("non-zero padding at offset \(index)")
        }
        offset = padded
    }

    mutating func readUInt8() throws(WireFormatError) -> UInt8 {
        guard offset < end else { throw WireFormatError("a byte past the end") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() throws(WireFormatError) -> UInt16 {
        try align(2)
        guard end - offset >= 2 else { throw WireFormatError("a 16-bit value past the end") }
        defer { offset += 2 }
        let raw = bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
        return bigEndian ? UInt16(bigEndian: raw) : UInt16(littleEndian: raw)
    }

    mutating func readUInt32() throws(WireFormatError) -> UInt32 {
        try align(4)
        guard end - offset >= 4 else { throw WireFormatError("a 32-bit value past the end") }
        defer { offset += 4 }
        let raw = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw)
    }

    mutating func readUInt64() throws(WireFormatError) -> UInt64 {
        try align(8)
        guard end - offset >= 8 else { throw WireFormatError("a 64-bit value past the end") }
        defer { offset += 8 }
        let raw = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        return bigEndian ? UInt64(bigEndian: raw) : UInt64(littleEndian: raw)
    }

    /// `b`: a UINT32 that must be 0 or 1.
    public mutating func readBool() throws(WireFormatError) -> Bool {
        switch try readUInt32() {
        case 0: return false
        case 1: return true
        case let other: throw WireFormatError("boolean with value \(other)")
        }
    }

    // MARK: Strings

    /// `s` / `o`: the string's bytes (without the terminating NUL), borrowed from the message.
    public mutating func readStringBytes() throws(WireFormatError) -> UnsafeRawBufferPointer {
        let length = Int(try readUInt32())
        return try readTerminated(length)
    }

    /// `g`: a signature's bytes, borrowed from the message.
    mutating func readSignatureBytes() throws(WireFormatError) -> UnsafeRawBufferPointer {
        let length = Int(try readUInt8())
        return try readTerminated(length)
    }

    private mutating func readTerminated(_ length: Int) throws(WireFormatError) -> UnsafeRawBufferPointer {
        guard length < end - offset else { throw WireFormatError("a string of \(length) bytes runs past the end") }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
        guard bytes[offset + length] == 0 else { throw WireFormatError("a string without its terminating NUL") }
        offset += length + 1
        return slice
    }

    /// `s`: a string, which must be valid UTF-8 without NULs (spec).
    public mutating func readString() throws(WireFormatError) -> String {
        try Self.string(from: try readStringBytes())
    }

    /// Reads an `s` and says whether it equals `expected`, without building a String.
    public mutating func readString(equals expected: String) throws(WireFormatError) -> Bool {
        Self.bytes(try readStringBytes(), equal: expected)
    }

    /// Whether borrowed bytes (a key, a name) are the UTF-8 of `text`.
    public static func bytes(_ bytes: UnsafeRawBufferPointer, equal text: String) -> Bool {
        var text = text
        return text.withUTF8 { same(UnsafeRawBufferPointer($0), bytes) }
    }

    /// Byte equality by memcmp: header fields and keys are compared for every message on a busy stream.
    static func same(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Bool {
        guard left.count == right.count else { return false }
        guard let leftBase = left.baseAddress, let rightBase = right.baseAddress else { return true }
        return memcmp(leftBase, rightBase, left.count) == 0
    }

    static func string(from bytes: UnsafeRawBufferPointer) throws(WireFormatError) -> String {
        guard !bytes.contains(0), let string = String(validating: bytes, as: UTF8.self) else {
            throw WireFormatError("a string that is not valid UTF-8")
        }
        return string
    }

    // MARK: Containers

    /// Enters an array whose elements align to `elementAlignment` (8 for dictionary entries): returns a reader
    /// bounded by the array's end and moves this one past it.
    /// Spec: the length counts the elements' bytes, not the padding before the first element.
    mutating func enterArray(elementAlignment: Int) throws(WireFormatError) -> DBusWireReader {
        let length = Int(try readUInt32())
        // Spec: arrays are at most 2^26 bytes (64 MiB).
        guard length <= 1 << 26 else { throw WireFormatError("an array of \(length) bytes") }
        try align(elementAlignment)
        guard length <= end - offset else { throw WireFormatError("an array of \(length) bytes runs past the end") }
        let inner = DBusWireReader(bytes: bytes, bigEndian: bigEndian, offset: offset, end: offset + length)
        offset += length
        return inner
    }

    /// `ay`: the bytes, borrowed from the message.
    public mutating func readByteArray() throws(WireFormatError) -> UnsafeRawBufferPointer {
        let inner = try enterArray(elementAlignment: 1)
        return UnsafeRawBufferPointer(rebasing: bytes[inner.offset..<inner.end])
    }

    /// `a{sv}`, entry by entry: `visit` gets each key and the variant's reader positioned at its value.
    /// A value `visit` does not read is skipped.
    public mutating func readVariantDictionary(
        _ visit: (_ key: UnsafeRawBufferPointer, _ value: inout DBusWireVariant) throws -> Void
    ) throws {
        var entries = try enterArray(elementAlignment: 8)
        while !entries.isAtEnd {
            try entries.align(8)
            let key = try entries.readStringBytes()
            var variant = try DBusWireVariant(reading: &entries)
            try visit(key, &variant)
            try variant.finish(into: &entries)
        }
    }

    // MARK: Any value

    /// Spec: "The maximum depth of container type nesting is 64 ... including variants" (arrays, structs and
    /// variants together). Variants carry their own signatures, so only counting while reading bounds them.
    static let maximumDepth = 64

    /// Reads a value of `type` into a `DBusValue`.
    mutating func readValue(_ type: WireType, depth: Int = 0) throws(WireFormatError) -> DBusValue {
        guard depth <= Self.maximumDepth else { throw WireFormatError("containers nested deeper than 64") }
        switch type {
        case .basic(let code):
            return try readBasic(code)
        case .array(let element):
            if element == .basic(UInt8(ascii: "y")) {
                return .bytes(try readByteArray())
            }
            var inner = try enterArray(elementAlignment: element.alignment)
            var elements: [DBusValue] = []
            while !inner.isAtEnd {
                elements.append(try inner.readValue(element, depth: depth + 1))
            }
            return .array(elementSignature: DBusSignature(element.signature), elements)
        case .dictionary(let key, let value):
            var inner = try enterArray(elementAlignment: 8)
            var entries: [DBusDictionaryEntry] = []
            while !inner.isAtEnd {
                try inner.align(8)
                let keyValue = try inner.readBasic(key)
                entries.append(DBusDictionaryEntry(key: keyValue, value: try inner.readValue(value, depth: depth + 2)))
            }
            return .dictionary(
                keySignature: DBusSignature(String(UnicodeScalar(key))), valueSignature: DBusSignature(value.signature),
                entries)
        case .structure(let fields):
            try align(8)
            var values: [DBusValue] = []
            for field in fields {
                values.append(try readValue(field, depth: depth + 1))
            }
            return .structure(values)
        case .variant:
            let inner = try WireType.parseSingle(try readSignatureBytes())
            return .variant(try readValue(inner, depth: depth + 1))
        }
    }

    private mutating func readBasic(_ code: UInt8) throws(WireFormatError) -> DBusValue {
        switch code {
        case UInt8(ascii: "y"): return .byte(try readUInt8())
        case UInt8(ascii: "b"): return .bool(try readBool())
        case UInt8(ascii: "n"): return .int16(Int16(bitPattern: try readUInt16()))
        case UInt8(ascii: "q"): return .uint16(try readUInt16())
        case UInt8(ascii: "i"): return .int32(Int32(bitPattern: try readUInt32()))
        case UInt8(ascii: "u"): return .uint32(try readUInt32())
        case UInt8(ascii: "x"): return .int64(Int64(bitPattern: try readUInt64()))
        case UInt8(ascii: "t"): return .uint64(try readUInt64())
        case UInt8(ascii: "d"): return .double(Double(bitPattern: try readUInt64()))
        case UInt8(ascii: "s"): return .string(try readString())
        case UInt8(ascii: "o"): return .objectPath(DBusObjectPath(try readString()))
        case UInt8(ascii: "g"):
            return .signature(DBusSignature(try Self.string(from: try readSignatureBytes())))
        default:
            // `h` indexes the message's Unix fds, which this reader's connections never negotiate.
            throw WireFormatError("type '\(String(UnicodeScalar(code)))' cannot be read here")
        }
    }

    /// Moves past a value of `type` without building it. Arrays are skipped by their length in one step.
    mutating func skipValue(_ type: WireType, depth: Int = 0) throws(WireFormatError) {
        guard depth <= Self.maximumDepth else { throw WireFormatError("containers nested deeper than 64") }
        switch type {
        case .basic(let code):
            switch code {
            case UInt8(ascii: "y"): _ = try readUInt8()
            case UInt8(ascii: "n"), UInt8(ascii: "q"): _ = try readUInt16()
            case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"): _ = try readUInt64()
            case UInt8(ascii: "s"), UInt8(ascii: "o"): _ = try readStringBytes()
            case UInt8(ascii: "g"): _ = try readSignatureBytes()
            default: _ = try readUInt32()
            }
        case .array(let element):
            _ = try enterArray(elementAlignment: element.alignment)
        case .dictionary:
            _ = try enterArray(elementAlignment: 8)
        case .structure(let fields):
            try align(8)
            for field in fields { try skipValue(field, depth: depth + 1) }
        case .variant:
            let inner = try WireType.parseSingle(try readSignatureBytes())
            try skipValue(inner, depth: depth + 1)
        }
    }
}

/// A variant being read: its signature, and its value for whoever wants it.
public struct DBusWireVariant {
    /// The variant's signature bytes (one complete type), borrowed from the message.
    public let signature: UnsafeRawBufferPointer
    private var reader: DBusWireReader
    private var consumed = false

    init(reading reader: inout DBusWireReader) throws(WireFormatError) {
        signature = try reader.readSignatureBytes()
        self.reader = reader
    }

    /// Whether the variant holds the single type `code` (e.g. "b").
    public func holds(_ code: Unicode.Scalar) -> Bool {
        signature.count == 1 && signature[0] == UInt8(code.value)
    }

    /// Whether the variant holds `ay`.
    public var holdsBytes: Bool {
        signature.count == 2 && signature[0] == UInt8(ascii: "a") && signature[1] == UInt8(ascii: "y")
    }

    /// The `ay` value's bytes, borrowed from the message.
    public mutating func readBytes() throws -> UnsafeRawBufferPointer {
        guard holdsBytes else { throw WireFormatError("the variant holds '\(signatureText)', not 'ay'") }
        consumed = true
        return try reader.readByteArray()
    }

    /// The `b` value.
    public mutating func readBool() throws -> Bool {
        guard holds("b") else { throw WireFormatError("the variant holds '\(signatureText)', not 'b'") }
        consumed = true
        return try reader.readBool()
    }

    /// The value, whatever its type.
    public mutating func readValue() throws -> DBusValue {
        consumed = true
        return try reader.readValue(try WireType.parseSingle(signature))
    }

    private var signatureText: String { String(decoding: signature, as: UTF8.self) }

    /// Moves `outer` past this variant's value (skipping it if nobody read it).
    mutating func finish(into outer: inout DBusWireReader) throws {
        if !consumed {
            try reader.skipValue(try WireType.parseSingle(signature))
        }
        outer = reader
    }
}
