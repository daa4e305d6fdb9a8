import TetherPrimitives

/// Record Access Control Point 0x2A52 as a server reads requests and writes responses (GLS v1.0.1, Record
/// Access Control Point; the same procedure in PLXS v1.0.1 and CGMS v1.0.1; GATT Specification Supplement).
/// A value is Op Code (uint8), Operator (uint8), Operand (variable).
public enum RACPOpCode: UInt8, Hashable, Sendable, CaseIterable {
    case reportStoredRecords = 0x01
    case deleteStoredRecords = 0x02
    case abortOperation = 0x03
    case reportNumberOfStoredRecords = 0x04
    case numberOfStoredRecordsResponse = 0x05
    case responseCode = 0x06
}

public enum RACPOperator: UInt8, Hashable, Sendable, CaseIterable {
    case null = 0x00
    case allRecords = 0x01
    case lessThanOrEqualTo = 0x02
    case greaterThanOrEqualTo = 0x03
    case withinRangeOf = 0x04
    case firstRecord = 0x05
    case lastRecord = 0x06
}

/// The Response Code values (GATT Specification Supplement, "Response Code Values").
public enum RACPResponseCode: UInt8, Hashable, Sendable, CaseIterable {
    case success = 0x01
    case opCodeNotSupported = 0x02
    case invalidOperator = 0x03
    case operatorNotSupported = 0x04
    case invalidOperand = 0x05
    case noRecordsFound = 0x06
    case abortUnsuccessful = 0x07
    case procedureNotCompleted = 0x08
    case operandNotSupported = 0x09
    case serverBusy = 0x0A
}

/// Which records a request names. The key is the sequence number (Filter Type 0x01 in GLS and PLXS) or, in CGMS,
/// the time offset in minutes (Filter Type 0x01 there too, CGMS).
public enum RACPSelection: Hashable, Sendable {
    case all
    case atMost(UInt16)
    case atLeast(UInt16)
    case range(UInt16, UInt16)
    case first
    case last
}

public enum RACPRequest: Hashable, Sendable {
    case report(RACPSelection)
    case delete(RACPSelection)
    case abort
    case reportNumber(RACPSelection)
}

/// A request the server refuses with a Response Code (never an ATT error: the value was written fine).
public struct RACPRefusal: Error, Hashable, Sendable {
    public let requestOpCode: UInt8
    public let code: RACPResponseCode
}

extension RACPRequest {
    /// Filter Type 0x01: sequence number (GLS/PLXS) or time offset (CGMS); 0x02 user facing time (GLS), which the
    /// simulated devices do not support.
    static let keyFilterType: UInt8 = 0x01
    static let userFacingTimeFilterType: UInt8 = 0x02

    /// Reads a written RACP value, refusing it with the Response Code the specification gives for each fault
    /// (GLS v1.0.1, "General Error Handling"): an unknown op code → Op Code Not Supported; an operator the
    /// op code does not take → Invalid Operator; an unknown operator → Operator Not Supported; a missing, extra or
    /// malformed operand (or a range whose minimum exceeds its maximum) → Invalid Operand; a filter type the server
    /// lacks → Operand Not Supported.
    public static func decode(_ bytes: [UInt8]) -> Result<RACPRequest, RACPRefusal> {
        var reader = ByteReader(bytes)
        guard let rawOpCode = reader.readUInt8() else {
            return .failure(RACPRefusal(requestOpCode: 0, code: .opCodeNotSupported))
        }
        func refuse(_ code: RACPResponseCode) -> Result<RACPRequest, RACPRefusal> {
            .failure(RACPRefusal(requestOpCode: rawOpCode, code: code))
        }
        guard let opCode = RACPOpCode(rawValue: rawOpCode),
            [.reportStoredRecords, .deleteStoredRecords, .abortOperation, .reportNumberOfStoredRecords].contains(opCode)
        else { return refuse(.opCodeNotSupported) }
        guard let rawOperator = reader.readUInt8() else { return refuse(.invalidOperator) }
        guard let op = RACPOperator(rawValue: rawOperator) else { return refuse(.operatorNotSupported) }
        let operand = Array(reader.readBytes(reader.remaining) ?? [])

        if opCode == .abortOperation {
            // GLS: Abort takes the Null operator and no operand.
            guard op == .null else { return refuse(.invalidOperator) }
            guard operand.isEmpty else { return refuse(.invalidOperand) }
            return .success(.abort)
        }
        let selection: RACPSelection
        switch op {
        case .null:
            return refuse(.invalidOperator)
        case .allRecords, .firstRecord, .lastRecord:
            guard operand.isEmpty else { return refuse(.invalidOperand) }
            selection = op == .allRecords ? .all : op == .firstRecord ? .first : .last
        case .lessThanOrEqualTo, .greaterThanOrEqualTo, .withinRangeOf:
            var operandReader = ByteReader(operand)
            guard let filterType = operandReader.readUInt8() else { return refuse(.invalidOperand) }
            guard filterType == keyFilterType else {
                return refuse(filterType == userFacingTimeFilterType ? .operandNotSupported : .invalidOperand)
            }
            let count = op == .withinRangeOf ? 2 : 1
            var keys: [UInt16] = []
            for _ in 0..<count {
                guard let key = operandReader.readUInt16() else { return refuse(.invalidOperand) }
                keys.append(key)
            }
            guard operandReader.remaining == 0 else { return refuse(.invalidOperand) }
            switch op {
            case .lessThanOrEqualTo: selection = .atMost(keys[0])
            case .greaterThanOrEqualTo: selection = .atLeast(keys[0])
            default:
                guard keys[0] <= keys[1] else { return refuse(.invalidOperand) }
                selection = .range(keys[0], keys[1])
            }
        }
        switch opCode {
        case .reportStoredRecords: return .success(.report(selection))
        case .deleteStoredRecords: return .success(.delete(selection))
        default: return .success(.reportNumber(selection))
        }
    }

    /// The request's bytes, as a client writes them (for tests and the bleak peer's expectations).
    public var bytes: [UInt8] {
        func encode(_ opCode: RACPOpCode, _ selection: RACPSelection) -> [UInt8] {
            func key(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
            switch selection {
            case .all: return [opCode.rawValue, RACPOperator.allRecords.rawValue]
            case .first: return [opCode.rawValue, RACPOperator.firstRecord.rawValue]
            case .last: return [opCode.rawValue, RACPOperator.lastRecord.rawValue]
            case .atMost(let value):
                return [opCode.rawValue, RACPOperator.lessThanOrEqualTo.rawValue, Self.keyFilterType] + key(value)
            case .atLeast(let value):
                return [opCode.rawValue, RACPOperator.greaterThanOrEqualTo.rawValue, Self.keyFilterType] + key(value)
            case .range(let low, let high):
                return [opCode.rawValue, RACPOperator.withinRangeOf.rawValue, Self.keyFilterType] + key(low) + key(high)
            }
        }
        switch self {
        case .report(let selection): return encode(.reportStoredRecords, selection)
        case .delete(let selection): return encode(.deleteStoredRecords, selection)
        case .reportNumber(let selection): return encode(.reportNumberOfStoredRecords, selection)
        case .abort: return [RACPOpCode.abortOperation.rawValue, RACPOperator.null.rawValue]
        }
    }
}

/// What the server indicates on the RACP.
public enum RACPResponse: Hashable, Sendable {
    /// Op code 0x05, Null operator, uint16 count.
    case numberOfStoredRecords(UInt16)
    /// Op code 0x06, Null operator, the request's op code and the response code.
    case responseCode(requestOpCode: UInt8, RACPResponseCode)

    public var bytes: [UInt8] {
        switch self {
        case .numberOfStoredRecords(let count):
            [RACPOpCode.numberOfStoredRecordsResponse.rawValue, RACPOperator.null.rawValue, UInt8(count & 0xFF), UInt8(count >> 8)]
        case .responseCode(let opCode, let code):
            [RACPOpCode.responseCode.rawValue, RACPOperator.null.rawValue, opCode, code.rawValue]
        }
    }
}
