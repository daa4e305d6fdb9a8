/// Appends integers to a byte array, little-endian unless a write says otherwise.
public struct ByteWriter {
    public var bytes: [UInt8]

    public init(capacity: Int = 16) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func write(_ value: UInt8) { bytes.append(value) }

    public mutating func write(_ value: UInt16, _ endianness: Endianness = .little) {
        writeInteger(value, endianness)
    }

    public mutating func write(_ value: UInt32, _ endianness: Endianness = .little) {
        writeInteger(value, endianness)
    }

    public mutating func write(_ value: UInt64, _ endianness: Endianness = .little) {
        writeInteger(value, endianness)
    }

    /// The low 24 bits of `value`.
    public mutating func writeUInt24(_ value: UInt32, _ endianness: Endianness = .little) {
        writeInteger(value, endianness, width: 3)
    }

    public mutating func write<Bytes: Sequence>(contentsOf other: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: other)
    }

    private mutating func writeInteger<T: FixedWidthInteger & UnsignedInteger>(
        _ value: T, _ endianness: Endianness, width: Int = MemoryLayout<T>.size
    ) {
        for offset in 0..<width {
            let shift = 8 * (endianness == .little ? offset : width - 1 - offset)
            bytes.append(UInt8(truncatingIfNeeded: value >> shift))
        }
    }
}
