/// The User Data Service's User Control Point 0x2A9F (UDS v1.0 and GATT Specification Supplement) on the
/// multi-user scale. A request is Op Code (uint8) and parameters; the response, indicated, is 0x20, the request op
/// code, the result (0x01 success, 0x02 op code not supported, 0x03 invalid parameter, 0x04 operation failed,
/// 0x05 user not authorized) and, for Register New User, the new user index.
extension HealthDevice {
    static let ucpResponse: UInt8 = 0x20

    enum UCPResult: UInt8 {
        case success = 0x01
        case opCodeNotSupported = 0x02
        case invalidParameter = 0x03
        case operationFailed = 0x04
        case userNotAuthorized = 0x05
    }

    mutating func userControlPoint(_ bytes: [UInt8]) throws(ATTError) {
        guard enabled.contains(HealthUUID.userControlPoint) else { throw .clientCharacteristicConfigurationImproperlyConfigured }
        guard let opCode = bytes.first else { throw .invalidAttributeValueLength }
        func respond(_ result: UCPResult, _ extra: [UInt8] = []) {
            outbox.append(HealthTransmission(
                characteristic: HealthUUID.userControlPoint, value: [Self.ucpResponse, opCode, result.rawValue] + extra,
                delivery: .indicate))
        }
        switch opCode {
        case 0x01:  // Register New User: consent code uint16 (0...9999).
            guard bytes.count == 3 else { return respond(.invalidParameter) }
            let code = UInt16(bytes[1]) | UInt16(bytes[2]) << 8
            guard code <= 9999 else { return respond(.invalidParameter) }
            let index = UInt8((users.map(\.index).max().map { Int($0) + 1 }) ?? 0)
            guard index < 0xFF else { return respond(.operationFailed) }
            users.append(HealthUser(index: index, consentCode: code))
            respond(.success, [index])
        case 0x02:  // Consent: user index uint8, consent code uint16.
            guard bytes.count == 4 else { return respond(.invalidParameter) }
            let code = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
            guard let user = users.first(where: { $0.index == bytes[1] }), code <= 9999 else {
                return respond(.invalidParameter)
            }
            guard user.consentCode == code else { return respond(.userNotAuthorized) }
            consentedUser = user.index
            respond(.success)
            // WSS v1.0 with UDS: the consented user's stored measurements follow.
            if enabled.contains(HealthUUID.weightMeasurement) {
                outbox += storedWeights { $0 == user.index }
            }
        case 0x03:  // Delete User Data: the consented user's.
            guard let user = consentedUser else { return respond(.userNotAuthorized) }
            for record in store.records where recordUsers[record.sequenceNumber] == user {
                _ = store.delete(.range(record.sequenceNumber, record.sequenceNumber))
                recordUsers[record.sequenceNumber] = nil
            }
            users.removeAll { $0.index == user }
            consentedUser = nil
            respond(.success)
        default:
            respond(.opCodeNotSupported)
        }
    }
}
