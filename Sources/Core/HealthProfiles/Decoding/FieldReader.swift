import TetherPrimitives

/// A `ByteReader` that throws a `HealthDecodingError` naming the field when the bytes run out: every parser in this
/// module reads through it, so a truncated value is always a typed error and never a crash or a default.
struct FieldReader {
    private var reader: ByteReader
    let characteristic: String

    init(_ bytes: ArraySlice<UInt8>, characteristic: String) {
        self.reader = ByteReader(bytes)
        self.characteristic = characteristic
    }

    /// Offset from the start of the characteristic value.
    var offset: Int { reader.index - reader.bytes.startIndex }
    var remaining: Int { reader.remaining }

    func error(_ code: HealthDecodingError.Code, _ field: String, at offset: Int? = nil, _ detail: String = "") -> HealthDecodingError {
        HealthDecodingError(code, characteristic: characteristic, field: field, offset: offset ?? self.offset, detail: detail)
    }

    private func truncated(_ field: String, needs count: Int) -> HealthDecodingError {
        error(.truncated, field, "needs \(count) byte\(count == 1 ? "" : "s"), \(remaining) left")
    }

    mutating func uint8(_ field: String) throws(HealthDecodingError) -> UInt8 {
        guard let value = reader.readUInt8() else { throw truncated(field, needs: 1) }
        return value
    }

    mutating func uint16(_ field: String) throws(HealthDecodingError) -> UInt16 {
        guard let value = reader.readUInt16() else { throw truncated(field, needs: 2) }
        return value
    }

    mutating func sint16(_ field: String) throws(HealthDecodingError) -> Int16 {
        Int16(bitPattern: try uint16(field))
    }

    mutating func uint24(_ field: String) throws(HealthDecodingError) -> UInt32 {
        guard let value = reader.readUInt24() else { throw truncated(field, needs: 3) }
        return value
    }

    mutating func sfloat(_ field: String) throws(HealthDecodingError) -> MedicalFloat {
        MedicalFloat.sfloat(try uint16(field))
    }

    mutating func float(_ field: String) throws(HealthDecodingError) -> MedicalFloat {
        guard let value = reader.readUInt32() else { throw truncated(field, needs: 4) }
        return MedicalFloat.float(value)
    }

    mutating func bytes(_ field: String, count: Int) throws(HealthDecodingError) -> ArraySlice<UInt8> {
        guard let value = reader.readBytes(count) else { throw truncated(field, needs: count) }
        return value
    }

    /// A Date Time (GATT Specification Supplement §3.70) embedded as a time stamp.
    mutating func dateTime(_ field: String) throws(HealthDecodingError) -> DeviceDateTime {
        let start = offset
        guard remaining >= DeviceDateTime.byteCount else { throw truncated(field, needs: DeviceDateTime.byteCount) }
        do {
            return try DeviceDateTime.decode(from: &reader)
        } catch {
            switch error {
            case .truncated: throw truncated(field, needs: DeviceDateTime.byteCount)
            case .outOfRange(let name, let value):
                throw self.error(.invalidField, "\(field).\(name)", at: start, "\(value) is out of range")
            }
        }
    }

    /// Bytes after the last field the flags announce. The characteristics decoded here end with their last
    /// flag-announced field; octets after it are ignored (see `HealthDecoder`'s note on extensibility) but counted
    /// so that the decoded value and the CLI show them.
    mutating func trailingByteCount() -> Int {
        let count = remaining
        _ = reader.readBytes(count)
        return count
    }
}
