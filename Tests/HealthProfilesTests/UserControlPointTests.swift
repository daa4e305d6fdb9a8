import Testing
import TetherPrimitives
@testable import HealthProfiles

/// Golden vectors for the User Control Point (0x2A9F) codec, worked by hand from UDS v1.0 §3.4 (User Control Point:
/// Op Code uint8, then the parameter; Consent Code uint16 0x0000…0x270F; User Index uint8; Response Code 0x20 with
/// the Request Op Code, the Response Value and, after a successful Register New User, the new User Index) and the
/// GATT Specification Supplement's field table. Multi-octet fields little-endian (Core v5.3 Vol 3 Part G §3.3.3).
@Suite struct UserControlPointTests {
    static func code(_ value: UInt16) throws -> ConsentCode { try #require(ConsentCode(value)) }

    @Test func encodesRequests() throws {
        // Register New User, consent code 1234 = 0x04D2: 01 D2 04.
        #expect(UserControlPointRequest.registerNewUser(consentCode: try Self.code(1234)).bytes == [0x01, 0xD2, 0x04])
        // Consent, user 1, code 4321 = 0x10E1: 02 01 E1 10.
        #expect(UserControlPointRequest.consent(userIndex: 1, consentCode: try Self.code(4321)).bytes == [0x02, 0x01, 0xE1, 0x10])
        // The range's ends: 0 and 9999 = 0x270F.
        #expect(UserControlPointRequest.consent(userIndex: 0, consentCode: try Self.code(0)).bytes == [0x02, 0x00, 0x00, 0x00])
        #expect(UserControlPointRequest.consent(userIndex: 2, consentCode: try Self.code(9999)).bytes == [0x02, 0x02, 0x0F, 0x27])
        // Delete User Data has no parameter.
        #expect(UserControlPointRequest.deleteUserData.bytes == [0x03])
    }

    @Test func aConsentCodeAbove9999IsNone() {
        #expect(ConsentCode(9999) != nil)
        #expect(ConsentCode(10_000) == nil)
        #expect(ConsentCode(0xFFFF) == nil)
    }

    @Test func aConsentCodeIsNeverPrinted() throws {
        let code = try Self.code(4321)
        let request = UserControlPointRequest.consent(userIndex: 2, consentCode: code)
        for text in ["\(code)", String(reflecting: code), "\(request)", String(reflecting: request),
                     "\(UserConsentProcedure.Credential(userIndex: 2, code: code))",
                     "\(UserConsentProcedure.Order.write(request))"] {
            #expect(!text.contains("4321"), "\(text)")
        }
        var dumped = ""
        dump(request, to: &dumped)
        #expect(!dumped.contains("4321"), "\(dumped)")
    }

    @Test func decodesRequestsBackAndRefusesBadOnes() throws {
        #expect(try UserControlPointRequest.decode([0x02, 0x01, 0xE1, 0x10]) == .consent(userIndex: 1, consentCode: try Self.code(4321)))
        #expect(try UserControlPointRequest.decode([0x01, 0x0F, 0x27]) == .registerNewUser(consentCode: try Self.code(9999)))
        #expect(try UserControlPointRequest.decode([0x03]) == .deleteUserData)
        func refusal(_ bytes: [UInt8]) -> UserControlPointError.Code? {
            do { _ = try UserControlPointRequest.decode(bytes); return nil } catch { return error.code }
        }
        #expect(refusal([]) == .empty)
        #expect(refusal([0x02, 0x01, 0xE1]) == .invalidLength)  // the code cut short
        #expect(refusal([0x02, 0x01, 0xE1, 0x10, 0x00]) == .invalidLength)
        #expect(refusal([0x01, 0x10, 0x27]) == .consentCodeOutOfRange)  // 0x2710 = 10000
        #expect(refusal([0x03, 0x00]) == .invalidLength)
        #expect(refusal([0x20, 0x02, 0x01]) == .unknownRequest)
        #expect(refusal([0x07]) == .unknownRequest)
    }

    @Test func decodesEveryResponseValue() throws {
        #expect(try UserControlPointResponse.decode([0x20, 0x02, 0x01]) == UserControlPointResponse(request: .consent, result: .success))
        #expect(try UserControlPointResponse.decode([0x20, 0x02, 0x02]).result == .opCodeNotSupported)
        #expect(try UserControlPointResponse.decode([0x20, 0x02, 0x03]).result == .invalidParameter)
        #expect(try UserControlPointResponse.decode([0x20, 0x02, 0x04]).result == .operationFailed)
        #expect(try UserControlPointResponse.decode([0x20, 0x02, 0x05]).result == .userNotAuthorized)
        // A value UDS v1.0 does not define is kept, not refused.
        #expect(try UserControlPointResponse.decode([0x20, 0x02, 0x09]).result == .unknown(0x09))
        // Register New User's success carries the new index: 20 01 01 03 = user 3.
        let registered = try UserControlPointResponse.decode([0x20, 0x01, 0x01, 0x03])
        #expect(registered == UserControlPointResponse(request: .registerNewUser, result: .success, registeredUserIndex: 3))
        // Its failure carries none.
        #expect(try UserControlPointResponse.decode([0x20, 0x01, 0x03]) == UserControlPointResponse(request: .registerNewUser, result: .invalidParameter))
        // A response to an op code the device did not know: 20 07 02.
        #expect(try UserControlPointResponse.decode([0x20, 0x07, 0x02]) == UserControlPointResponse(request: .unknown(0x07), result: .opCodeNotSupported))
        for response in [registered, UserControlPointResponse(request: .consent, result: .userNotAuthorized)] {
            #expect(try UserControlPointResponse.decode(response.bytes) == response)
        }
    }

    @Test func refusesBytesThatAreNoResponse() {
        func refusal(_ bytes: [UInt8]) -> UserControlPointError.Code? {
            do { _ = try UserControlPointResponse.decode(bytes); return nil } catch { return error.code }
        }
        #expect(refusal([]) == .empty)
        #expect(refusal([0x02, 0x01, 0xE1, 0x10]) == .notAResponse)  // a request echoed
        #expect(refusal([0x06, 0x00, 0x01, 0x01]) == .notAResponse)  // a RACP response on the wrong characteristic
        #expect(refusal([0x20]) == .invalidLength)
        #expect(refusal([0x20, 0x02]) == .invalidLength)
        #expect(refusal([0x20, 0x02, 0x01, 0x00]) == .invalidLength)  // Consent's success has no parameter
        #expect(refusal([0x20, 0x01, 0x01]) == .invalidLength)  // Register New User's success without its index
        #expect(refusal([0x20, 0x01, 0x01, 0x03, 0x00]) == .invalidLength)
    }
}
