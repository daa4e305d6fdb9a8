/// The vocabulary of the Record Access Control Point (0x2A52, GATT Specification Supplement §3.178; used by the
/// Glucose, Continuous Glucose Monitoring, Pulse Oximeter and other services): op codes, operators, filter types,
/// response codes and the ATT application errors a write to it can fail with.
///
/// Every enumeration keeps the values it does not know as `.unknown(raw)`: a device speaking a newer revision must
/// not crash the gateway or be mistaken for a known value.

/// GSS §3.178.1, Op Code field.
public enum RecordAccessOpCode: Hashable, Sendable, CustomStringConvertible {
    case reportStoredRecords  // 0x01
    case deleteStoredRecords  // 0x02
    case abortOperation  // 0x03
    case reportNumberOfStoredRecords  // 0x04
    case numberOfStoredRecordsResponse  // 0x05
    case responseCode  // 0x06
    case combinedReport  // 0x07 (GSS §3.178.1, later revisions)
    case combinedReportResponse  // 0x08
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0x01: self = .reportStoredRecords
        case 0x02: self = .deleteStoredRecords
        case 0x03: self = .abortOperation
        case 0x04: self = .reportNumberOfStoredRecords
        case 0x05: self = .numberOfStoredRecordsResponse
        case 0x06: self = .responseCode
        case 0x07: self = .combinedReport
        case 0x08: self = .combinedReportResponse
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .reportStoredRecords: 0x01
        case .deleteStoredRecords: 0x02
        case .abortOperation: 0x03
        case .reportNumberOfStoredRecords: 0x04
        case .numberOfStoredRecordsResponse: 0x05
        case .responseCode: 0x06
        case .combinedReport: 0x07
        case .combinedReportResponse: 0x08
        case .unknown(let raw): raw
        }
    }

    public var description: String { "op 0x\(hex(rawValue))" }
}

/// GSS §3.178.2, Operator field.
public enum RecordAccessOperator: Hashable, Sendable {
    case null  // 0x00: responses and Abort carry it
    case allRecords  // 0x01
    case lessThanOrEqualTo  // 0x02
    case greaterThanOrEqualTo  // 0x03
    case withinRangeOf  // 0x04 (inclusive)
    case firstRecord  // 0x05: the oldest
    case lastRecord  // 0x06: the most recent
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0x00: self = .null
        case 0x01: self = .allRecords
        case 0x02: self = .lessThanOrEqualTo
        case 0x03: self = .greaterThanOrEqualTo
        case 0x04: self = .withinRangeOf
        case 0x05: self = .firstRecord
        case 0x06: self = .lastRecord
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .null: 0x00
        case .allRecords: 0x01
        case .lessThanOrEqualTo: 0x02
        case .greaterThanOrEqualTo: 0x03
        case .withinRangeOf: 0x04
        case .firstRecord: 0x05
        case .lastRecord: 0x06
        case .unknown(let raw): raw
        }
    }
}

/// The Filter Type byte that begins the operand of a filtered request (GSS §3.178.3). Its meaning depends on the
/// service: 0x01 is the Sequence Number in the Glucose Service (GLS v1.0) and the Pulse Oximeter Service, but the
/// Time Offset (uint16, minutes since the session start) in the CGM Service (CGMS v1.0.1); 0x02 is the User Facing
/// Time (a Date Time) where a service supports it.
public enum RecordAccessFilterType: Hashable, Sendable {
    case sequenceNumberOrTimeOffset  // 0x01
    case userFacingTime  // 0x02
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0x01: self = .sequenceNumberOrTimeOffset
        case 0x02: self = .userFacingTime
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .sequenceNumberOrTimeOffset: 0x01
        case .userFacingTime: 0x02
        case .unknown(let raw): raw
        }
    }
}

/// GSS §3.178.4, Response Code values (the second byte of a Response Code operand).
public enum RecordAccessResponseCode: Hashable, Sendable {
    case success  // 0x01
    case opCodeNotSupported  // 0x02
    case invalidOperator  // 0x03
    case operatorNotSupported  // 0x04
    case invalidOperand  // 0x05
    /// 0x06: the request selected no record (never for Report Number, which answers 0).
    case noRecordsFound
    case abortUnsuccessful  // 0x07
    case procedureNotCompleted  // 0x08
    case operandNotSupported  // 0x09
    /// 0x0A (GSS §3.178.4; not in GLS v1.0): the server cannot take the request now; try later.
    case serverBusy
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0x01: self = .success
        case 0x02: self = .opCodeNotSupported
        case 0x03: self = .invalidOperator
        case 0x04: self = .operatorNotSupported
        case 0x05: self = .invalidOperand
        case 0x06: self = .noRecordsFound
        case 0x07: self = .abortUnsuccessful
        case 0x08: self = .procedureNotCompleted
        case 0x09: self = .operandNotSupported
        case 0x0A: self = .serverBusy
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .success: 0x01
        case .opCodeNotSupported: 0x02
        case .invalidOperator: 0x03
        case .operatorNotSupported: 0x04
        case .invalidOperand: 0x05
        case .noRecordsFound: 0x06
        case .abortUnsuccessful: 0x07
        case .procedureNotCompleted: 0x08
        case .operandNotSupported: 0x09
        case .serverBusy: 0x0A
        case .unknown(let raw): raw
        }
    }

    /// The request was understood but this device cannot do it (its op code, operator or operand): asking the same
    /// again will not help; another form of the request might.
    public var isUnsupportedRequest: Bool {
        switch self {
        case .opCodeNotSupported, .invalidOperator, .operatorNotSupported, .invalidOperand, .operandNotSupported: true
        case .success, .noRecordsFound, .abortUnsuccessful, .procedureNotCompleted, .serverBusy, .unknown: false
        }
    }
}

/// The ATT Error Response a write to the control point can fail with (Core Specification Supplement Part B §1.2
/// common profile errors; CGMS v1.0.1, Attribute Protocol application error codes).
public enum RecordAccessATTError: Hashable, Sendable {
    /// 0xFE (CSS Part B §1.2): a control-point procedure is already running; the write was not acted on.
    case procedureAlreadyInProgress
    /// 0xFD (CSS Part B §1.2): the control point's indications are not enabled, so the server cannot answer.
    case clientCharacteristicConfigurationImproperlyConfigured
    /// 0x80 in the CGM Service: E2E-CRC is supported but the written value carried none.
    case missingCRC
    /// 0x81 in the CGM Service: the written value's E2E-CRC is wrong.
    case invalidCRC
    /// Any other ATT error code (authentication, encryption, write not permitted, …).
    case other(UInt8)

    /// `service` says whose application error space 0x80–0x9F is: only CGMS gives 0x80 and 0x81 these meanings.
    public init(code: UInt8, inCGMService: Bool = false) {
        switch code {
        case 0xFE: self = .procedureAlreadyInProgress
        case 0xFD: self = .clientCharacteristicConfigurationImproperlyConfigured
        case 0x80 where inCGMService: self = .missingCRC
        case 0x81 where inCGMService: self = .invalidCRC
        default: self = .other(code)
        }
    }

    public var code: UInt8 {
        switch self {
        case .procedureAlreadyInProgress: 0xFE
        case .clientCharacteristicConfigurationImproperlyConfigured: 0xFD
        case .missingCRC: 0x80
        case .invalidCRC: 0x81
        case .other(let code): code
        }
    }
}

private func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return digits.count == 1 ? "0" + digits : digits
}
