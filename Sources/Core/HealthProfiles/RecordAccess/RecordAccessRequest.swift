import TetherPrimitives

/// What identifies a stored record to the control point's filter type 0x01: the Glucose and Pulse Oximeter
/// services number records (uint16 Sequence Number, GLS v1.0 Glucose Measurement), the CGM Service counts minutes since the
/// session start (uint16 Time Offset, CGMS v1.0.1 CGM Measurement). Both are uint16 on the wire and in RACP operands.
public enum RecordKeyKind: Hashable, Sendable {
    /// Consecutive numbers, one per record: a missing number is a missing record.
    case sequenceNumber
    /// Minutes since the session start: increasing, but several minutes apart, so a missing record is invisible.
    case timeOffset
}

/// The value a filtered request compares records with (GSS §3.178.3 Operand: filter type, then the filter
/// parameters).
public enum RecordFilterValue: Hashable, Sendable {
    case sequenceNumber(UInt16)
    case timeOffset(UInt16)
    case userFacingTime(DeviceDateTime)
}

/// An inclusive range for the "within range of" operator: both ends have the same filter type by construction.
public enum RecordFilterRange: Hashable, Sendable {
    case sequenceNumbers(ClosedRange<UInt16>)
    case timeOffsets(ClosedRange<UInt16>)
    case userFacingTimes(from: DeviceDateTime, through: DeviceDateTime)
}

/// Which stored records a request is about (the operator and its operand, GSS §3.178.2–3).
public enum RecordSelection: Hashable, Sendable {
    case allRecords
    case firstRecord
    case lastRecord
    case lessThanOrEqualTo(RecordFilterValue)
    case greaterThanOrEqualTo(RecordFilterValue)
    case withinRange(RecordFilterRange)
}

/// A request the gateway writes to the control point (GSS §3.178; the RACP procedures of GLS v1.0).
public enum RecordAccessRequest: Hashable, Sendable {
    case reportStoredRecords(RecordSelection)
    case deleteStoredRecords(RecordSelection)
    case abortOperation
    case reportNumberOfStoredRecords(RecordSelection)

    public var opCode: RecordAccessOpCode {
        switch self {
        case .reportStoredRecords: .reportStoredRecords
        case .deleteStoredRecords: .deleteStoredRecords
        case .abortOperation: .abortOperation
        case .reportNumberOfStoredRecords: .reportNumberOfStoredRecords
        }
    }

    /// The bytes to write: op code, operator, then the operand (filter type and little-endian parameters).
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 17)
        writer.write(opCode.rawValue)
        switch self {
        case .abortOperation:
            writer.write(RecordAccessOperator.null.rawValue)  // GSS §3.178.2: Abort carries the null operator
        case .reportStoredRecords(let selection), .deleteStoredRecords(let selection), .reportNumberOfStoredRecords(let selection):
            Self.encode(selection, into: &writer)
        }
        return writer.bytes
    }

    private static func encode(_ selection: RecordSelection, into writer: inout ByteWriter) {
        switch selection {
        case .allRecords: writer.write(RecordAccessOperator.allRecords.rawValue)
        case .firstRecord: writer.write(RecordAccessOperator.firstRecord.rawValue)
        case .lastRecord: writer.write(RecordAccessOperator.lastRecord.rawValue)
        case .lessThanOrEqualTo(let value):
            writer.write(RecordAccessOperator.lessThanOrEqualTo.rawValue)
            encode(value, into: &writer, withType: true)
        case .greaterThanOrEqualTo(let value):
            writer.write(RecordAccessOperator.greaterThanOrEqualTo.rawValue)
            encode(value, into: &writer, withType: true)
        case .withinRange(let range):
            writer.write(RecordAccessOperator.withinRangeOf.rawValue)
            switch range {
            case .sequenceNumbers(let numbers):
                encode(.sequenceNumber(numbers.lowerBound), into: &writer, withType: true)
                encode(.sequenceNumber(numbers.upperBound), into: &writer, withType: false)
            case .timeOffsets(let offsets):
                encode(.timeOffset(offsets.lowerBound), into: &writer, withType: true)
                encode(.timeOffset(offsets.upperBound), into: &writer, withType: false)
            case .userFacingTimes(let from, let through):
                encode(.userFacingTime(from), into: &writer, withType: true)
                encode(.userFacingTime(through), into: &writer, withType: false)
            }
        }
    }

    private static func encode(_ value: RecordFilterValue, into writer: inout ByteWriter, withType: Bool) {
        switch value {
        case .sequenceNumber(let number), .timeOffset(let number):
            if withType { writer.write(RecordAccessFilterType.sequenceNumberOrTimeOffset.rawValue) }
            writer.write(number)
        case .userFacingTime(let time):
            if withType { writer.write(RecordAccessFilterType.userFacingTime.rawValue) }
            time.encode(into: &writer)
        }
    }
}

// MARK: - Decoding (the device's side: tether-sim and the fuzz round trip read what the gateway wrote)

extension RecordAccessRequest {
    /// Why written bytes are not a request this codec understands. A server answers most of these with a Response
    /// Code (GSS §3.178.4: op code not supported, invalid operator, invalid operand…), so each says which.
    public enum DecodingError: Error, Hashable, Sendable {
        case empty
        /// Not a request op code (a response op code, 0x00, or one this codec does not know).
        case opCodeNotSupported(UInt8)
        case invalidOperator(opCode: UInt8, operator: UInt8)
        case filterTypeNotSupported(UInt8)
        /// The operand is too short, too long, or a range whose lower end is above its upper end.
        case invalidOperand(opCode: UInt8, length: Int)
        /// A Date Time operand outside its ranges (GSS §3.70).
        case invalidUserFacingTime(DeviceDateTime.DecodingError)
    }

    /// Reads a request; `keys` says whether filter type 0x01 is a Sequence Number or a CGM Time Offset.
    public static func decode(_ bytes: [UInt8], keys: RecordKeyKind) throws(DecodingError) -> RecordAccessRequest {
        var reader = ByteReader(bytes)
        guard let opByte = reader.readUInt8() else { throw .empty }
        let opCode = RecordAccessOpCode(rawValue: opByte)
        guard let operatorByte = reader.readUInt8() else { throw .invalidOperand(opCode: opByte, length: 0) }
        let request: RecordAccessRequest
        switch opCode {
        case .abortOperation:
            guard operatorByte == RecordAccessOperator.null.rawValue else {
                throw .invalidOperator(opCode: opByte, operator: operatorByte)
            }
            request = .abortOperation
        case .reportStoredRecords:
            request = .reportStoredRecords(try selection(opByte, operatorByte, &reader, keys))
        case .deleteStoredRecords:
            request = .deleteStoredRecords(try selection(opByte, operatorByte, &reader, keys))
        case .reportNumberOfStoredRecords:
            request = .reportNumberOfStoredRecords(try selection(opByte, operatorByte, &reader, keys))
        case .numberOfStoredRecordsResponse, .responseCode, .combinedReport, .combinedReportResponse, .unknown:
            throw .opCodeNotSupported(opByte)
        }
        guard reader.remaining == 0 else { throw .invalidOperand(opCode: opByte, length: bytes.count - 2) }
        return request
    }

    private static func selection(
        _ opByte: UInt8, _ operatorByte: UInt8, _ reader: inout ByteReader, _ keys: RecordKeyKind
    ) throws(DecodingError) -> RecordSelection {
        switch RecordAccessOperator(rawValue: operatorByte) {
        case .allRecords: return .allRecords
        case .firstRecord: return .firstRecord
        case .lastRecord: return .lastRecord
        case .lessThanOrEqualTo: return .lessThanOrEqualTo(try filterValue(opByte, &reader, keys).value)
        case .greaterThanOrEqualTo: return .greaterThanOrEqualTo(try filterValue(opByte, &reader, keys).value)
        case .withinRangeOf:
            let (low, type) = try filterValue(opByte, &reader, keys)
            let high = try parameter(opByte, type, &reader, keys)
            switch (low, high) {
            case (.sequenceNumber(let a), .sequenceNumber(let b)) where a <= b: return .withinRange(.sequenceNumbers(a...b))
            case (.timeOffset(let a), .timeOffset(let b)) where a <= b: return .withinRange(.timeOffsets(a...b))
            case (.userFacingTime(let a), .userFacingTime(let b)): return .withinRange(.userFacingTimes(from: a, through: b))
            default: throw .invalidOperand(opCode: opByte, length: reader.bytes.count - 2)
            }
        case .null, .unknown:
            throw .invalidOperator(opCode: opByte, operator: operatorByte)
        }
    }

    private static func filterValue(
        _ opByte: UInt8, _ reader: inout ByteReader, _ keys: RecordKeyKind
    ) throws(DecodingError) -> (value: RecordFilterValue, type: RecordAccessFilterType) {
        guard let typeByte = reader.readUInt8() else { throw .invalidOperand(opCode: opByte, length: 0) }
        let type = RecordAccessFilterType(rawValue: typeByte)
        if case .unknown = type { throw .filterTypeNotSupported(typeByte) }
        return (try parameter(opByte, type, &reader, keys), type)
    }

    private static func parameter(
        _ opByte: UInt8, _ type: RecordAccessFilterType, _ reader: inout ByteReader, _ keys: RecordKeyKind
    ) throws(DecodingError) -> RecordFilterValue {
        switch type {
        case .sequenceNumberOrTimeOffset:
            guard let number = reader.readUInt16() else { throw .invalidOperand(opCode: opByte, length: reader.bytes.count - 2) }
            return keys == .sequenceNumber ? .sequenceNumber(number) : .timeOffset(number)
        case .userFacingTime:
            do throws(DeviceDateTime.DecodingError) {
                return .userFacingTime(try DeviceDateTime.decode(from: &reader))
            } catch {
                if case .truncated = error { throw .invalidOperand(opCode: opByte, length: reader.bytes.count - 2) }
                throw .invalidUserFacingTime(error)
            }
        case .unknown(let raw):
            throw .filterTypeNotSupported(raw)
        }
    }
}
