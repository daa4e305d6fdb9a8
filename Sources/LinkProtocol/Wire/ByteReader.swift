/// A bounds-checked little-endian reader over a slice of bytes.
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

    public var remaining: Int { bytes.endIndex - index }

    public mutating func readUInt8() -> UInt8? {
        guard index < bytes.endIndex else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    public mutating func readUInt16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { index += 2 }
        return UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
    }

    public mutating func readUInt32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { index += 4 }
        return UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8
            | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24
    }

    public mutating func readBytes(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, remaining >= count else { return nil }
        defer { index += count }
        return bytes[index..<(index + count)]
    }
}

/// Appends little-endian integers to a byte array.
public struct ByteWriter {
    public var bytes: [UInt8]

    public init(capacity: Int = 16) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func write(_ value: UInt8) { bytes.append(value) }

    public mutating func write(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    public mutating func write(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    public mutating func write<Bytes: Sequence>(contentsOf other: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: other)
    }
}
