import Testing
import TetherPrimitives
@testable import HealthProfiles

/// Golden vectors for the Record Access Control Point (0x2A52) codec.
///
/// Sources:
/// - Requests: the byte layouts built by Nordic Semiconductor's Android-BLE-Common-Library,
///   ble-common/src/main/java/no/nordicsemi/android/ble/common/data/RecordAccessControlPointData.java
///   (reportAllStoredRecords = {1, 1}, reportFirst/LastStoredRecord = {1, 5} / {1, 6}, "≥ sequence number" =
///   {1, 3, 1, LSB, MSB}, range = {op, 4, 1, start LE16, end LE16}, deleteAllStoredRecords = {2, 1},
///   reportNumberOfAllStoredRecords = {4, 1}, abortOperation = {3, 0}; FilterType 0x01 doubles as TIME_OFFSET for
///   CGMS, 0x02 is USER_FACING_TIME).
/// - Responses: the vectors of the same library's RecordAccessControlPointDataCallbackTest.java
///   (ble-common/src/test/java/no/nordicsemi/android/ble/common/callback/).
/// - The resume request and success response in the project's notes (shared/notes/health-profiles.md), checked
///   against GSS §3.178: `01 03 01 <seq+1 LE16>` and `06 00 01 01`.
@Suite struct RecordAccessCodecTests {
    @Test func encodesRequestsAsNordicsBuilderLaysThemOut() {
        #expect(RecordAccessRequest.reportStoredRecords(.allRecords).bytes == [1, 1])
        #expect(RecordAccessRequest.reportStoredRecords(.firstRecord).bytes == [1, 5])
        #expect(RecordAccessRequest.reportStoredRecords(.lastRecord).bytes == [1, 6])
        #expect(RecordAccessRequest.deleteStoredRecords(.allRecords).bytes == [2, 1])
        #expect(RecordAccessRequest.reportNumberOfStoredRecords(.allRecords).bytes == [4, 1])
        #expect(RecordAccessRequest.abortOperation.bytes == [3, 0])
        // Sequence number 0x1234 = 4660: LSB first.
        #expect(RecordAccessRequest.reportStoredRecords(.greaterThanOrEqualTo(.sequenceNumber(4660))).bytes == [1, 3, 1, 0x34, 0x12])
        #expect(RecordAccessRequest.reportStoredRecords(.lessThanOrEqualTo(.sequenceNumber(41))).bytes == [1, 2, 1, 41, 0])
        #expect(RecordAccessRequest.reportStoredRecords(.withinRange(.sequenceNumbers(12...412))).bytes == [1, 4, 1, 12, 0, 0x9C, 0x01])
        #expect(RecordAccessRequest.deleteStoredRecords(.lessThanOrEqualTo(.sequenceNumber(258))).bytes == [2, 2, 1, 2, 1])
        #expect(RecordAccessRequest.reportNumberOfStoredRecords(.greaterThanOrEqualTo(.sequenceNumber(7))).bytes == [4, 3, 1, 7, 0])
        // CGMS: the same filter type 0x01 carries the time offset in minutes.
        #expect(RecordAccessRequest.reportStoredRecords(.greaterThanOrEqualTo(.timeOffset(1440))).bytes == [1, 3, 1, 0xA0, 0x05])
    }

    @Test func theResumeRequestFromTheNotes() throws {
        // Cursor 0x00FF: "≥ 0x0100" = 01 03 01 00 01.
        #expect(RecordAccessRequest.reportStoredRecords(.greaterThanOrEqualTo(.sequenceNumber(0x0100))).bytes == [0x01, 0x03, 0x01, 0x00, 0x01])
        #expect(try RecordAccessResponse.decode([0x06, 0x00, 0x01, 0x01]) == .responseCode(request: .reportStoredRecords, code: .success))
    }

    @Test func userFacingTimeFilterCarriesADateTime() {
        let time = DeviceDateTime(year: 2024, month: 11, day: 24, hours: 13, minutes: 42, seconds: 7)
        #expect(RecordAccessRequest.reportStoredRecords(.greaterThanOrEqualTo(.userFacingTime(time))).bytes
            == [1, 3, 2, 0xE8, 0x07, 0x0B, 0x18, 0x0D, 0x2A, 0x07])
    }

    /// Nordic's RecordAccessControlPointDataCallbackTest, vector by vector.
    @Test func decodesNordicsResponseVectors() throws {
        let codes: [([UInt8], RecordAccessOpCode, RecordAccessResponseCode)] = [
            ([6, 0, 1, 1], .reportStoredRecords, .success),
            ([6, 0, 12, 2], .unknown(12), .opCodeNotSupported),
            ([6, 0, 1, 3], .reportStoredRecords, .invalidOperator),
            ([6, 0, 2, 4], .deleteStoredRecords, .operatorNotSupported),
            ([6, 0, 1, 5], .reportStoredRecords, .invalidOperand),
            ([6, 0, 1, 6], .reportStoredRecords, .noRecordsFound),
            ([6, 0, 3, 7], .abortOperation, .abortUnsuccessful),
            ([6, 0, 2, 8], .deleteStoredRecords, .procedureNotCompleted),
            ([6, 0, 2, 9], .deleteStoredRecords, .operandNotSupported),
            // Nordic's test calls 10 an unknown error code; GSS §3.178.4 has since named 0x0A Server Busy.
            ([6, 0, 1, 10], .reportStoredRecords, .serverBusy),
            ([6, 0, 1, 0x77], .reportStoredRecords, .unknown(0x77)),
        ]
        for (bytes, request, code) in codes {
            let response = try RecordAccessResponse.decode(bytes)
            #expect(response == .responseCode(request: request, code: code), "\(bytes)")
            #expect(response.bytes == bytes, "round trip of \(bytes)")
        }
        // Nordic also takes {5, 0, 1} as a count of 1; here it is refused (see refusesWhatNordicRefuses…).
        #expect(try RecordAccessResponse.decode([5, 0, 2, 1]) == .numberOfStoredRecords(258))
        #expect(try RecordAccessResponse.decode([5, 0, 4, 3, 2, 1]) == .numberOfStoredRecords(16_909_060))
        #expect(RecordAccessResponse.numberOfStoredRecords(258).bytes == [5, 0, 2, 1])
        #expect(RecordAccessResponse.numberOfStoredRecords(16_909_060).bytes == [5, 0, 4, 3, 2, 1])
    }

    @Test func refusesWhatNordicRefusesWithATypedError() {
        #expect(throws: RecordAccessResponse.DecodingError.invalidOperandLength(opCode: 5, length: 1)) {
            try RecordAccessResponse.decode([5, 0, 1])
        }
        #expect(throws: RecordAccessResponse.DecodingError.invalidOperandLength(opCode: 5, length: 3)) {
            try RecordAccessResponse.decode([5, 0, 3, 2, 1])
        }
        #expect(throws: RecordAccessResponse.DecodingError.notAResponse(opCode: 1)) { try RecordAccessResponse.decode([1, 1]) }
        #expect(throws: RecordAccessResponse.DecodingError.notAResponse(opCode: 1)) { try RecordAccessResponse.decode([1, 3, 1, 2, 0]) }
        #expect(throws: RecordAccessResponse.DecodingError.operatorNotNull(opCode: 6, operator: 1)) { try RecordAccessResponse.decode([6, 1, 1]) }
        #expect(throws: RecordAccessResponse.DecodingError.empty) { try RecordAccessResponse.decode([]) }
        #expect(throws: RecordAccessResponse.DecodingError.invalidOperandLength(opCode: 6, length: 1)) { try RecordAccessResponse.decode([6, 0, 1]) }
        #expect(throws: RecordAccessResponse.DecodingError.invalidOperandLength(opCode: 6, length: 3)) { try RecordAccessResponse.decode([6, 0, 1, 1, 0]) }
        #expect(throws: RecordAccessResponse.DecodingError.invalidOperandLength(opCode: 6, length: 0)) { try RecordAccessResponse.decode([6]) }
    }

    @Test func keepsUnknownOpCodesInsteadOfFailing() throws {
        #expect(try RecordAccessResponse.decode([0x09, 0x00, 0xAB]) == .unknown(opCode: 0x09, bytes: [0x09, 0x00, 0xAB]))
        #expect(try RecordAccessResponse.decode([0x00]) == .unknown(opCode: 0x00, bytes: [0x00]))
        #expect(try RecordAccessResponse.decode([0x08, 0x00, 1, 0, 0, 0]) == .unknown(opCode: 0x08, bytes: [0x08, 0x00, 1, 0, 0, 0]))
        for raw in UInt8.min...UInt8.max {
            #expect(RecordAccessOpCode(rawValue: raw).rawValue == raw)
            #expect(RecordAccessOperator(rawValue: raw).rawValue == raw)
            #expect(RecordAccessResponseCode(rawValue: raw).rawValue == raw)
            #expect(RecordAccessFilterType(rawValue: raw).rawValue == raw)
        }
    }

    /// CSS Part B §1.2 (0xFD, 0xFE) and CGMS (0x80 missing CRC, 0x81 invalid CRC, CGMS only).
    @Test func mapsATTErrors() {
        #expect(RecordAccessATTError(code: 0xFE) == .procedureAlreadyInProgress)
        #expect(RecordAccessATTError(code: 0xFD) == .clientCharacteristicConfigurationImproperlyConfigured)
        #expect(RecordAccessATTError(code: 0x80, inCGMService: true) == .missingCRC)
        #expect(RecordAccessATTError(code: 0x81, inCGMService: true) == .invalidCRC)
        #expect(RecordAccessATTError(code: 0x80) == .other(0x80))
        #expect(RecordAccessATTError(code: 0x05) == .other(0x05))
        #expect(RecordAccessATTError.invalidCRC.code == 0x81)
    }

    /// The device side (tether-sim) reads what the gateway wrote; the same vectors read back.
    @Test func decodesRequestsForTheDeviceSide() throws {
        #expect(try RecordAccessRequest.decode([1, 3, 1, 0x34, 0x12], keys: .sequenceNumber) == .reportStoredRecords(.greaterThanOrEqualTo(.sequenceNumber(4660))))
        #expect(try RecordAccessRequest.decode([1, 3, 1, 0xA0, 0x05], keys: .timeOffset) == .reportStoredRecords(.greaterThanOrEqualTo(.timeOffset(1440))))
        #expect(try RecordAccessRequest.decode([1, 4, 1, 12, 0, 0x9C, 0x01], keys: .sequenceNumber) == .reportStoredRecords(.withinRange(.sequenceNumbers(12...412))))
        #expect(try RecordAccessRequest.decode([3, 0], keys: .sequenceNumber) == .abortOperation)
        #expect(try RecordAccessRequest.decode([4, 1], keys: .sequenceNumber) == .reportNumberOfStoredRecords(.allRecords))
        #expect(try RecordAccessRequest.decode([2, 6], keys: .sequenceNumber) == .deleteStoredRecords(.lastRecord))
        #expect(throws: RecordAccessRequest.DecodingError.invalidOperator(opCode: 3, operator: 1)) { try RecordAccessRequest.decode([3, 1], keys: .sequenceNumber) }
        #expect(throws: RecordAccessRequest.DecodingError.invalidOperator(opCode: 1, operator: 0)) { try RecordAccessRequest.decode([1, 0], keys: .sequenceNumber) }
        #expect(throws: RecordAccessRequest.DecodingError.invalidOperator(opCode: 1, operator: 7)) { try RecordAccessRequest.decode([1, 7], keys: .sequenceNumber) }
        #expect(throws: RecordAccessRequest.DecodingError.filterTypeNotSupported(3)) { try RecordAccessRequest.decode([1, 3, 3, 0, 0], keys: .sequenceNumber) }
        #expect(throws: RecordAccessRequest.DecodingError.invalidOperand(opCode: 1, length: 2)) { try RecordAccessRequest.decode([1, 3, 1, 0], keys: .sequenceNumber) }
        #expect(throws: RecordAccessRequest.DecodingError.invalidOperand(opCode: 1, length: 5)) { try RecordAccessRequest.decode([1, 4, 1, 9, 0, 8, 0], keys: .sequenceNumber) }
        #expect(throws: RecordAccessRequest.DecodingError.invalidOperand(opCode: 1, length: 1)) { try RecordAccessRequest.decode([1, 1, 0], keys: .sequenceNumber) }
        #expect(throws: RecordAccessRequest.DecodingError.opCodeNotSupported(6)) { try RecordAccessRequest.decode([6, 0, 1, 1], keys: .sequenceNumber) }
        #expect(throws: RecordAccessRequest.DecodingError.empty) { try RecordAccessRequest.decode([], keys: .sequenceNumber) }
        #expect(throws: RecordAccessRequest.DecodingError.invalidUserFacingTime(.outOfRange(field: "month", value: 13))) {
            try RecordAccessRequest.decode([1, 3, 2, 0xE8, 0x07, 13, 1, 0, 0, 0], keys: .sequenceNumber)
        }
    }

    @Test func everyTruncationOfAResponseIsRefusedNotCrashed() {
        let whole: [[UInt8]] = [[6, 0, 1, 1], [5, 0, 2, 1]]
        for bytes in whole {
            for cut in 0..<bytes.count {
                #expect(throws: RecordAccessResponse.DecodingError.self) { try RecordAccessResponse.decode(Array(bytes[..<cut])) }
            }
        }
    }
}
