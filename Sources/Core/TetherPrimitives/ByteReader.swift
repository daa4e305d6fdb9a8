/// A bounds-checked reader over a slice of bytes, little-endian unless a read says otherwise.
///
/// Every read returns `nil` when the bytes run out and leaves the reader where it was, so a caller can tell
/// "this payload is too short" from a value and never reads past the end.
public struct ByteReader {
    public let bytes: ArraySlice<UInt8>
    public private(set) var index: Int

    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.index = bytes.startIndex
    }

    public init(_ bytes: [UInt8]) {
        self.init(bytes[...])
    }

    public var remaining: Int { bytes.endIndex - index }

    public mutating func readUInt8() -> UInt8? {
        guard index < bytes.endIndex else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    public mutating func readUInt16(_ endianness: Endianness = .little) -> UInt16? {
        readInteger(UInt16.self, endianness)
    }

    /// A 24-bit unsigned integer (used by SIG characteristics such as Heart Rate's energy and CGM's time offsets).
    public mutating func readUInt24(_ endianness: Endianness = .little) -> UInt32? {
        readInteger(UInt32.self, endianness, width: 3)
    }

    public mutating func readUInt32(_ endianness: Endianness = .little) -> UInt32? {
        readInteger(UInt32.self, endianness)
    }

    public mutating func readUInt64(_ endianness: Endianness = .little) -> UInt64? {
        readInteger(UInt64.self, endianness)
    }

    public mutating func readBytes(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, remaining >= count else { return nil }
        defer { index += count }
        return bytes[index..<(index + count)]
    }

    /// Reads `width` bytes (default: the integer's size) in the given order; nil, and no move, when too short.
    private mutating func readInteger<T: FixedWidthInteger & UnsignedInteger>(
        _: T.Type, _ endianness: Endianness, width: Int = MemoryLayout<T>.size
    ) -> T? {
        guard remaining >= width else { return nil }
        var value: T = 0
        for offset in 0..<width {
            let byte = T(bytes[index + offset])
            switch endianness {
            case .little: value |= byte << (8 * offset)
            case .big: value |= byte << (8 * (width - 1 - offset))
            }
        }
        index += width
        return value
    }
}
