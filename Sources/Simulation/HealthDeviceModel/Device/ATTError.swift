/// The ATT error codes a simulated health device answers with (Core v5.3 Vol 3 Part F §3.4.1.1 Table 3.4, and the
/// Core Specification Supplement Part B §1.2 for 0xFD/0xFE).
public enum ATTError: UInt8, Error, Hashable, Sendable {
    case readNotPermitted = 0x02
    case writeNotPermitted = 0x03
    case insufficientAuthentication = 0x05
    case requestNotSupported = 0x06
    case invalidAttributeValueLength = 0x0D
    case clientCharacteristicConfigurationImproperlyConfigured = 0xFD
    case procedureAlreadyInProgress = 0xFE
    case outOfRange = 0xFF
}
