import TetherPrimitives

/// What a device indicates on the control point in answer to a request (GSS §3.178; in GLS v1.0 every
/// procedure ends with one indication, either a Number of Stored Records Response or a Response Code).
public enum RecordAccessResponse: Hashable, Sendable {
    /// Op code 0x05: the answer to Report Number of Stored Records.
    case numberOfStoredRecords(UInt32)
    /// Op code 0x06: the outcome of the request with op code `request`.
    case responseCode(request: RecordAccessOpCode, code: RecordAccessResponseCode)
    /// An op code this gateway does not know (0x00, 0x08, 0x09…0xFF), kept whole: a newer device's answer must
    /// not crash the gateway, and it is not a reason to refuse the bytes either.
    case unknown(opCode: UInt8, bytes: [UInt8])

    /// Why indicated bytes are not a response.
    public enum DecodingError: Error, Hashable, Sendable {
        case empty
        /// A request op code (0x01–0x04, 0x07) indicated back: a server never sends one.
        case notAResponse(opCode: UInt8)
        /// GSS §3.178.2: responses carry the null operator (0x00).
        case operatorNotNull(opCode: UInt8, operator: UInt8)
        /// The operand is not of the op code's size.
        case invalidOperandLength(opCode: UInt8, length: Int)
    }

    /// Reads one indication. Nothing is assumed about the bytes: every length and value is checked.
    public static func decode(_ bytes: [UInt8]) throws(DecodingError) -> RecordAccessResponse {
        var reader = ByteReader(bytes)
        guard let opByte = reader.readUInt8() else { throw .empty }
        switch RecordAccessOpCode(rawValue: opByte) {
        case .numberOfStoredRecordsResponse:
            try requireNullOperator(opByte, &reader)
            // GLS v1.0 and CGMS give the count as uint16. Nordic's Android-BLE-Common-Library
            // (RecordAccessControlPointDataCallback) also takes four bytes, and so does this; it takes one byte too,
            // but this does not: one byte cannot be told from a uint16 cut short.
            let operand = reader.remaining
            switch operand {
            case 2: if let count = reader.readUInt16() { return .numberOfStoredRecords(UInt32(count)) }
            case 4: if let count = reader.readUInt32() { return .numberOfStoredRecords(count) }
            default: break
            }
            throw .invalidOperandLength(opCode: opByte, length: operand)
        case .responseCode:
            try requireNullOperator(opByte, &reader)
            // GSS §3.178.3: the operand is the request op code, then the response code value.
            guard reader.remaining == 2, let request = reader.readUInt8(), let code = reader.readUInt8() else {
                throw .invalidOperandLength(opCode: opByte, length: reader.remaining)
            }
            return .responseCode(request: RecordAccessOpCode(rawValue: request), code: RecordAccessResponseCode(rawValue: code))
        case .reportStoredRecords, .deleteStoredRecords, .abortOperation, .reportNumberOfStoredRecords, .combinedReport:
            throw .notAResponse(opCode: opByte)
        case .combinedReportResponse, .unknown:
            return .unknown(opCode: opByte, bytes: bytes)
        }
    }

    private static func requireNullOperator(_ opByte: UInt8, _ reader: inout ByteReader) throws(DecodingError) {
        guard let operatorByte = reader.readUInt8() else { throw .invalidOperandLength(opCode: opByte, length: 0) }
        guard operatorByte == RecordAccessOperator.null.rawValue else {
            throw .operatorNotNull(opCode: opByte, operator: operatorByte)
        }
    }

    /// The bytes a device indicates (tether-sim's side). The count is written as uint16 when it fits, as GLS and
    /// CGMS define it, and as uint32 otherwise.
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 6)
        switch self {
        case .numberOfStoredRecords(let count):
            writer.write(RecordAccessOpCode.numberOfStoredRecordsResponse.rawValue)
            writer.write(RecordAccessOperator.null.rawValue)
            if let narrow = UInt16(exactly: count) { writer.write(narrow) } else { writer.write(count) }
        case .responseCode(let request, let code):
            writer.write(RecordAccessOpCode.responseCode.rawValue)
            writer.write(RecordAccessOperator.null.rawValue)
            writer.write(request.rawValue)
            writer.write(code.rawValue)
        case .unknown(_, let bytes):
            writer.write(contentsOf: bytes)
        }
        return writer.bytes
    }
}
