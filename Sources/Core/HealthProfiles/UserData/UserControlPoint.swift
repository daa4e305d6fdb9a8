import TetherPrimitives

// The User Data Service's User Control Point (0x2A9F), written from UDS v1.0 §3.4 (User Control Point: op codes,
// Response Code, the Register New User, Consent and Delete User Data procedures) and the GATT Specification
// Supplement's User Control Point field table. Wire form only; `UserConsentProcedure` is the procedure.
//
//   request:  Op Code (uint8) | Parameter
//     0x01 Register New User   Consent Code (uint16, 0x0000…0x270F)
//     0x02 Consent             User Index (uint8) | Consent Code (uint16)
//     0x03 Delete User Data    (none: the user consented on this connection)
//   response: 0x20 Response Code | Request Op Code (uint8) | Response Value (uint8) | Response Parameter
//     Response Value 0x01 Success, 0x02 Op Code not supported, 0x03 Invalid Parameter, 0x04 Operation Failed,
//     0x05 User Not Authorized; the Response Parameter is the new User Index after a successful Register New User.
//
// The section numbers are those of UDS v1.0 as adopted (2014); check against the published PDF before relying
// on a number rather than the procedure's name.

/// A user's consent code: UDS v1.0 §3.4 (Register New User, Consent): uint16, 0…9999 (0x270F). Its descriptions
/// never show the number, so a code interpolated into a log line, an error or a trace prints `<consent code>`.
public struct ConsentCode: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let maximum: UInt16 = 9999

    public let value: UInt16

    /// Nil for a value above 9999 (UDS v1.0 §3.4: the server answers such a request Invalid Parameter).
    public init?(_ value: UInt16) {
        guard value <= Self.maximum else { return nil }
        self.value = value
    }

    public var description: String { "<consent code>" }
    public var debugDescription: String { "<consent code>" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// A user index: UDS v1.0 §3.3 (User Index): uint8; 0xFF means "unknown user" and names nobody.
public enum UserIndex {
    public static let unknownUser: UInt8 = 0xFF
}

/// The User Control Point's op codes. Values this gateway does not know are kept as `.unknown(raw)`.
public enum UserControlPointOpCode: Hashable, Sendable, CustomStringConvertible {
    case registerNewUser  // 0x01
    case consent  // 0x02
    case deleteUserData  // 0x03
    case responseCode  // 0x20
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0x01: self = .registerNewUser
        case 0x02: self = .consent
        case 0x03: self = .deleteUserData
        case 0x20: self = .responseCode
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .registerNewUser: 0x01
        case .consent: 0x02
        case .deleteUserData: 0x03
        case .responseCode: 0x20
        case .unknown(let raw): raw
        }
    }

    public var description: String {
        switch self {
        case .registerNewUser: "Register New User"
        case .consent: "Consent"
        case .deleteUserData: "Delete User Data"
        case .responseCode: "Response Code"
        case .unknown(let raw): "op code 0x\(String(raw, radix: 16, uppercase: true))"
        }
    }
}

/// The Response Value of a Response Code indication.
public enum UserControlPointResult: Hashable, Sendable, CustomStringConvertible {
    case success  // 0x01
    case opCodeNotSupported  // 0x02
    case invalidParameter  // 0x03: for Consent, also a user index the server does not have
    case operationFailed  // 0x04
    case userNotAuthorized  // 0x05: for Consent, a wrong consent code
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0x01: self = .success
        case 0x02: self = .opCodeNotSupported
        case 0x03: self = .invalidParameter
        case 0x04: self = .operationFailed
        case 0x05: self = .userNotAuthorized
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .success: 0x01
        case .opCodeNotSupported: 0x02
        case .invalidParameter: 0x03
        case .operationFailed: 0x04
        case .userNotAuthorized: 0x05
        case .unknown(let raw): raw
        }
    }

    public var description: String {
        switch self {
        case .success: "success"
        case .opCodeNotSupported: "op code not supported"
        case .invalidParameter: "invalid parameter"
        case .operationFailed: "operation failed"
        case .userNotAuthorized: "user not authorized"
        case .unknown(let raw): "response value 0x\(String(raw, radix: 16, uppercase: true))"
        }
    }
}

/// Why bytes are not a User Control Point request or response. The gateway only decodes what a device indicates,
/// so every case is the remote side's fault; requests are decoded in tests.
public struct UserControlPointError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: Hashable, Sendable {
        case empty
        /// An indication whose op code is not Response Code (0x20): a server indicates nothing else.
        case notAResponse
        /// A request op code this codec does not know (decoding requests).
        case unknownRequest
        /// The bytes after the op code are not the length the op code takes.
        case invalidLength
        /// A consent code above 9999 (UDS v1.0 §3.4).
        case consentCodeOutOfRange
    }

    public let code: Code
    public let opCode: UInt8?
    public let length: Int

    public var description: String {
        let op = opCode.map { " (op code 0x\(String($0, radix: 16, uppercase: true)))" } ?? ""
        return switch code {
        case .empty: "no bytes"
        case .notAResponse: "not a Response Code indication\(op)"
        case .unknownRequest: "unknown request\(op)"
        case .invalidLength: "\(length) bytes is not the length of its op code\(op)"
        case .consentCodeOutOfRange: "consent code above 9999\(op)"
        }
    }
}

/// A request the gateway writes to the User Control Point.
public enum UserControlPointRequest: Hashable, Sendable, CustomStringConvertible {
    /// 0x01: register a new user protected by `consentCode`; the server answers with the new user's index.
    case registerNewUser(consentCode: ConsentCode)
    /// 0x02: consent to `userIndex`'s data on this connection.
    case consent(userIndex: UInt8, consentCode: ConsentCode)
    /// 0x03: delete the data of the user consented on this connection.
    case deleteUserData

    public var opCode: UserControlPointOpCode {
        switch self {
        case .registerNewUser: .registerNewUser
        case .consent: .consent
        case .deleteUserData: .deleteUserData
        }
    }

    /// The bytes written (little-endian, as every multi-octet GATT field).
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 4)
        writer.write(opCode.rawValue)
        switch self {
        case .registerNewUser(let code):
            writer.write(code.value)
        case .consent(let userIndex, let code):
            writer.write(userIndex)
            writer.write(code.value)
        case .deleteUserData:
            break
        }
        return writer.bytes
    }

    /// Never shows a consent code.
    public var description: String {
        switch self {
        case .registerNewUser: "Register New User"
        case .consent(let userIndex, _): "Consent for user \(userIndex)"
        case .deleteUserData: "Delete User Data"
        }
    }

    /// Reads a request (a server's side; the gateway uses it in tests). Every length and range is checked.
    public static func decode(_ bytes: [UInt8]) throws(UserControlPointError) -> UserControlPointRequest {
        var reader = ByteReader(bytes)
        guard let op = reader.readUInt8() else { throw UserControlPointError(code: .empty, opCode: nil, length: 0) }
        func fail(_ code: UserControlPointError.Code) -> UserControlPointError {
            UserControlPointError(code: code, opCode: op, length: bytes.count)
        }
        switch UserControlPointOpCode(rawValue: op) {
        case .registerNewUser:
            guard reader.remaining == 2, let raw = reader.readUInt16() else { throw fail(.invalidLength) }
            guard let code = ConsentCode(raw) else { throw fail(.consentCodeOutOfRange) }
            return .registerNewUser(consentCode: code)
        case .consent:
            guard reader.remaining == 3, let index = reader.readUInt8(), let raw = reader.readUInt16() else {
                throw fail(.invalidLength)
            }
            guard let code = ConsentCode(raw) else { throw fail(.consentCodeOutOfRange) }
            return .consent(userIndex: index, consentCode: code)
        case .deleteUserData:
            guard reader.remaining == 0 else { throw fail(.invalidLength) }
            return .deleteUserData
        case .responseCode, .unknown:
            throw fail(.unknownRequest)
        }
    }
}

/// A Response Code indication (op code 0x20): which request it answers, its result, and for a successful Register
/// New User the new user's index.
public struct UserControlPointResponse: Hashable, Sendable {
    public var request: UserControlPointOpCode
    public var result: UserControlPointResult
    /// The Response Parameter of a successful Register New User: the index the server gave the new user.
    public var registeredUserIndex: UInt8?

    public init(request: UserControlPointOpCode, result: UserControlPointResult, registeredUserIndex: UInt8? = nil) {
        self.request = request
        self.result = result
        self.registeredUserIndex = registeredUserIndex
    }

    /// Reads one indication. A successful Register New User carries exactly one parameter byte (the user index);
    /// every other response none: a response of any other length is refused rather than guessed at.
    public static func decode(_ bytes: [UInt8]) throws(UserControlPointError) -> UserControlPointResponse {
        var reader = ByteReader(bytes)
        guard let op = reader.readUInt8() else { throw UserControlPointError(code: .empty, opCode: nil, length: 0) }
        guard UserControlPointOpCode(rawValue: op) == .responseCode else {
            throw UserControlPointError(code: .notAResponse, opCode: op, length: bytes.count)
        }
        guard let requestByte = reader.readUInt8(), let resultByte = reader.readUInt8() else {
            throw UserControlPointError(code: .invalidLength, opCode: op, length: bytes.count)
        }
        let request = UserControlPointOpCode(rawValue: requestByte)
        let result = UserControlPointResult(rawValue: resultByte)
        switch (request, result) {
        case (.registerNewUser, .success):
            guard reader.remaining == 1, let index = reader.readUInt8() else {
                throw UserControlPointError(code: .invalidLength, opCode: op, length: bytes.count)
            }
            return UserControlPointResponse(request: request, result: result, registeredUserIndex: index)
        default:
            guard reader.remaining == 0 else {
                throw UserControlPointError(code: .invalidLength, opCode: op, length: bytes.count)
            }
            return UserControlPointResponse(request: request, result: result)
        }
    }

    /// The bytes a server indicates (tests).
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 4)
        writer.write(UserControlPointOpCode.responseCode.rawValue)
        writer.write(request.rawValue)
        writer.write(result.rawValue)
        if let registeredUserIndex { writer.write(registeredUserIndex) }
        return writer.bytes
    }
}
