/// The device side of the Record Access Control Point: every rule of the procedure lives in this file.
///
/// 1. A request is refused with a Response Code when its bytes are wrong (`RACPRequest.decode`).
/// 2. A write while a procedure is in progress (anything but Abort) is refused with ATT error 0xFE "Procedure
///    Already In Progress" (GLS v1.0.1; Core Supplement Part B §1.2 "Common Profile and Service Error Codes").
/// 3. A write while the client has not enabled indications on the RACP is refused with ATT error 0xFD "Client
///    Characteristic Configuration Descriptor Improperly Configured" (same sections).
/// 4. Report: each selected record's values, then Response Code Success; No Records Found when none matches.
///    Report Number: Number of Stored Records Response (0 is an answer, not an error). Delete: Success, or No
///    Records Found.
/// 5. Abort stops a report between two records and answers Success (or Abort Unsuccessful under the fault); the
///    aborted report gets no response of its own (GLS).
/// 6. Faults, configured per device: the next N requests answered Server Busy; the next N writes refused with ATT
///    0xFE as if another client's procedure ran; the link dropped after K records of a report; a report that stops
///    after K records with Procedure Not Completed; a device that does not delete (Delete Stored Records answered
///    Op Code Not Supported: the op code is optional in GLS and CGMS, and many meters leave it out).
///
/// Outputs are pulled one at a time with `next()` (quinn-proto's `poll_transmit`), so the link model decides the
/// pace and an Abort written mid-report lands between two records.
public struct RACPServer: Hashable, Sendable {
    public enum Output: Hashable, Sendable {
        case transmit(HealthTransmission)
        /// The device drops the link (the disconnect-mid-RACP fault).
        case disconnect
    }

    /// ATT errors the RACP write can get (Core Supplement Part B §1.2).
    public enum WriteRefusal: UInt8, Error, Hashable, Sendable {
        case clientCharacteristicConfigurationImproperlyConfigured = 0xFD
        case procedureAlreadyInProgress = 0xFE
    }

    public struct Faults: Hashable, Sendable, Codable {
        public var serverBusyResponses = 0
        public var procedureInProgressRefusals = 0
        public var disconnectAfterRecords: Int?
        public var notCompletedAfterRecords: Int?
        public var abortUnsuccessful = false
        /// Set at run time only (`health-racp-delete-unsupported`); not in the configuration's JSON.
        public var deleteUnsupported = false
        public init() {}

        enum CodingKeys: String, CodingKey {
            case serverBusyResponses, procedureInProgressRefusals, disconnectAfterRecords, notCompletedAfterRecords
            case abortUnsuccessful
        }
    }

    private enum Step: Hashable, Sendable {
        case record(StoredRecord)
        case response(RACPResponse)
    }

    public var faults = Faults()
    /// PLXS v1.0.1: the PLX RACP supports only the "All records" operator; the others are answered
    /// Operator Not Supported.
    public var allRecordsOnly = false
    private var pending: [Step] = []
    private var queued: [HealthTransmission] = []
    private var recordsSentInReport = 0
    private var reporting = false

    public init(allRecordsOnly: Bool = false) { self.allRecordsOnly = allRecordsOnly }

    public var inProgress: Bool { !pending.isEmpty || !queued.isEmpty }

    /// A client wrote `bytes` to the RACP. Throws the ATT error the write gets; otherwise the procedure runs and its
    /// outputs come from `next()`.
    public mutating func write(_ bytes: [UInt8], indicationsEnabled: Bool, store: inout RecordStore) throws(WriteRefusal) {
        guard indicationsEnabled else { throw .clientCharacteristicConfigurationImproperlyConfigured }
        let request = RACPRequest.decode(bytes)
        if case .success(.abort) = request {
            abort()
            return
        }
        if faults.procedureInProgressRefusals > 0 {
            faults.procedureInProgressRefusals -= 1
            throw .procedureAlreadyInProgress
        }
        guard !inProgress else { throw .procedureAlreadyInProgress }
        switch request {
        case .failure(let refusal):
            respond(refusal.requestOpCode, refusal.code)
        case .success(let request):
            let opCode = request.bytes[0]
            if faults.serverBusyResponses > 0 {
                faults.serverBusyResponses -= 1
                respond(opCode, .serverBusy)
                return
            }
            switch request {
            case .report(let selection) where allRecordsOnly && selection != .all,
                .delete(let selection) where allRecordsOnly && selection != .all,
                .reportNumber(let selection) where allRecordsOnly && selection != .all:
                respond(opCode, .operatorNotSupported)
            case .report(let selection):
                let records = store.select(selection)
                guard !records.isEmpty else { return respond(opCode, .noRecordsFound) }
                reporting = true
                recordsSentInReport = 0
                pending = records.map(Step.record) + [.response(.responseCode(requestOpCode: opCode, .success))]
            case .reportNumber(let selection):
                pending = [.response(.numberOfStoredRecords(UInt16(clamping: store.select(selection).count)))]
            case .delete where faults.deleteUnsupported:
                respond(opCode, .opCodeNotSupported)
            case .delete(let selection):
                respond(opCode, store.delete(selection) > 0 ? .success : .noRecordsFound)
            case .abort:
                abort()
            }
        }
    }

    /// The next value to send, or nil when idle.
    public mutating func next() -> Output? {
        if !queued.isEmpty { return .transmit(queued.removeFirst()) }
        guard !pending.isEmpty else { return nil }
        let step = pending.removeFirst()
        switch step {
        case .response(let response):
            reporting = false
            return .transmit(Self.indication(response))
        case .record(let record):
            if reporting, let limit = faults.disconnectAfterRecords, recordsSentInReport >= limit {
                faults.disconnectAfterRecords = nil
                linkLost()
                return .disconnect
            }
            if reporting, let limit = faults.notCompletedAfterRecords, recordsSentInReport >= limit {
                faults.notCompletedAfterRecords = nil
                pending.removeAll()
                reporting = false
                return .transmit(Self.indication(.responseCode(
                    requestOpCode: RACPOpCode.reportStoredRecords.rawValue, .procedureNotCompleted)))
            }
            recordsSentInReport += 1
            queued = Array(record.transmissions.dropFirst())
            guard let first = record.transmissions.first else { return next() }
            return .transmit(first)
        }
    }

    /// The link went down: a procedure in progress ends with it (GLS: the client starts again on reconnection).
    public mutating func linkLost() {
        pending.removeAll()
        queued.removeAll()
        reporting = false
    }

    private mutating func abort() {
        // The values of the record being sent go out whole; no further record starts.
        pending.removeAll()
        reporting = false
        let code: RACPResponseCode = faults.abortUnsuccessful ? .abortUnsuccessful : .success
        pending = [.response(.responseCode(requestOpCode: RACPOpCode.abortOperation.rawValue, code))]
    }

    private mutating func respond(_ opCode: UInt8, _ code: RACPResponseCode) {
        pending = [.response(.responseCode(requestOpCode: opCode, code))]
    }

    static func indication(_ response: RACPResponse) -> HealthTransmission {
        HealthTransmission(characteristic: HealthUUID.recordAccessControlPoint, value: response.bytes, delivery: .indicate)
    }
}

extension RACPServer.Faults {
    /// Every key optional in a configuration file.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        serverBusyResponses = try container.decodeIfPresent(Int.self, forKey: .serverBusyResponses) ?? 0
        procedureInProgressRefusals = try container.decodeIfPresent(Int.self, forKey: .procedureInProgressRefusals) ?? 0
        disconnectAfterRecords = try container.decodeIfPresent(Int.self, forKey: .disconnectAfterRecords)
        notCompletedAfterRecords = try container.decodeIfPresent(Int.self, forKey: .notCompletedAfterRecords)
        abortUnsuccessful = try container.decodeIfPresent(Bool.self, forKey: .abortUnsuccessful) ?? false
    }
}
