import HealthDeviceModel
import Testing
import TetherPrimitives

/// The RACP server: every response code, the ATT errors, abort mid-report and the faults (GLS v1.0.1, GATT
/// Specification Supplement, Record Access Control Point).
@Suite struct RACPServerTests {
    static func store(_ count: Int, first: UInt16 = 1) -> RecordStore {
        var store = RecordStore(firstSequenceNumber: first)
        for _ in 0..<count {
            store.append { sequence in
                StoredRecord(sequenceNumber: sequence, key: sequence, transmissions: [
                    HealthTransmission(characteristic: HealthUUID.glucoseMeasurement, value: [UInt8(sequence & 0xFF)], delivery: .notify)
                ])
            }
        }
        return store
    }

    /// Drains the server; returns the record values and the RACP responses.
    static func drain(_ server: inout RACPServer) -> (records: [[UInt8]], responses: [[UInt8]], disconnected: Bool) {
        var records: [[UInt8]] = []
        var responses: [[UInt8]] = []
        while let output = server.next() {
            switch output {
            case .disconnect: return (records, responses, true)
            case .transmit(let t) where t.characteristic == HealthUUID.recordAccessControlPoint: responses.append(t.value)
            case .transmit(let t): records.append(t.value)
            }
        }
        return (records, responses, false)
    }

    static func run(_ request: [UInt8], store: inout RecordStore)
        throws(RACPServer.WriteRefusal) -> (records: [[UInt8]], responses: [[UInt8]], disconnected: Bool)
    {
        var server = RACPServer()
        return try run(request, store: &store, server: &server)
    }

    static func run(_ request: [UInt8], store: inout RecordStore, server: inout RACPServer)
        throws(RACPServer.WriteRefusal) -> (records: [[UInt8]], responses: [[UInt8]], disconnected: Bool)
    {
        try server.write(request, indicationsEnabled: true, store: &store)
        return drain(&server)
    }

    @Test func reportAllSendsEveryRecordThenSuccess() throws {
        var store = Self.store(5)
        let result = try Self.run([0x01, 0x01], store: &store)
        #expect(result.records == [[1], [2], [3], [4], [5]])
        // Resume request and success from the facts note: 06 00 01 01.
        #expect(result.responses == [[0x06, 0x00, 0x01, 0x01]])
    }

    @Test func operatorsSelectByKey() throws {
        var store = Self.store(6)
        #expect(try Self.run([0x01, 0x03, 0x01, 0x04, 0x00], store: &store).records == [[4], [5], [6]])  // ≥ 4
        #expect(try Self.run([0x01, 0x02, 0x01, 0x02, 0x00], store: &store).records == [[1], [2]])  // ≤ 2
        #expect(try Self.run([0x01, 0x04, 0x01, 0x02, 0x00, 0x03, 0x00], store: &store).records == [[2], [3]])  // range
        #expect(try Self.run([0x01, 0x05], store: &store).records == [[1]])  // first
        #expect(try Self.run([0x01, 0x06], store: &store).records == [[6]])  // last
        // Report number: 05 00 count.
        #expect(try Self.run([0x04, 0x03, 0x01, 0x05, 0x00], store: &store).responses == [[0x05, 0x00, 0x02, 0x00]])
        #expect(try Self.run([0x04, 0x01], store: &store).responses == [[0x05, 0x00, 0x06, 0x00]])
    }

    @Test(arguments: [
        ([0x07, 0x01], 0x07, 0x02),  // unknown op code → Op Code Not Supported
        ([0x05, 0x00], 0x05, 0x02),  // a response op code is not a request
        ([0x01, 0x00], 0x01, 0x03),  // report with Null → Invalid Operator
        ([0x01, 0x09], 0x01, 0x04),  // unknown operator → Operator Not Supported
        ([0x01, 0x01, 0x00], 0x01, 0x05),  // "all" with an operand → Invalid Operand
        ([0x01, 0x03, 0x01, 0x05], 0x01, 0x05),  // truncated operand
        ([0x01, 0x04, 0x01, 0x05, 0x00, 0x02, 0x00], 0x01, 0x05),  // range min > max
        ([0x01, 0x03, 0x02, 0x05, 0x00], 0x01, 0x09),  // user facing time filter → Operand Not Supported
        ([0x03, 0x01], 0x03, 0x03),  // abort takes Null only
        ([0x01, 0x03, 0x01, 0x64, 0x00], 0x01, 0x06),  // ≥ 100: No Records Found
        ([0x02, 0x03, 0x01, 0x64, 0x00], 0x02, 0x06),  // delete none: No Records Found
    ] as [([UInt8], UInt8, UInt8)])
    func refusalsAnswerWithTheirResponseCode(request: [UInt8], opCode: UInt8, code: UInt8) throws {
        var store = Self.store(3)
        let result = try Self.run(request, store: &store)
        #expect(result.records.isEmpty)
        #expect(result.responses == [[0x06, 0x00, opCode, code]])
    }

    @Test func deleteRemovesTheSelectedRecords() throws {
        var store = Self.store(4)
        #expect(try Self.run([0x02, 0x02, 0x01, 0x02, 0x00], store: &store).responses == [[0x06, 0x00, 0x02, 0x01]])
        #expect(store.records.map(\.sequenceNumber) == [3, 4])
    }

    @Test func writesWithoutIndicationsOrDuringAProcedureGetATTErrors() throws {
        var store = Self.store(3)
        var server = RACPServer()
        #expect(throws: RACPServer.WriteRefusal.clientCharacteristicConfigurationImproperlyConfigured) {
            try server.write([0x01, 0x01], indicationsEnabled: false, store: &store)
        }
        try server.write([0x01, 0x01], indicationsEnabled: true, store: &store)
        _ = server.next()
        #expect(throws: RACPServer.WriteRefusal.procedureAlreadyInProgress) {
            try server.write([0x04, 0x01], indicationsEnabled: true, store: &store)
        }
    }

    /// GLS: Abort between records ends the report; only the abort is answered.
    @Test func abortMidReport() throws {
        var store = Self.store(10)
        var server = RACPServer()
        try server.write([0x01, 0x01], indicationsEnabled: true, store: &store)
        _ = server.next()
        _ = server.next()
        try server.write([0x03, 0x00], indicationsEnabled: true, store: &store)
        let rest = Self.drain(&server)
        #expect(rest.records.isEmpty)
        #expect(rest.responses == [[0x06, 0x00, 0x03, 0x01]])
        var failing = RACPServer()
        failing.faults.abortUnsuccessful = true
        #expect(try Self.run([0x03, 0x00], store: &store, server: &failing).responses == [[0x06, 0x00, 0x03, 0x07]])
    }

    @Test func faultsBusyInProgressDisconnectNotCompleted() throws {
        var store = Self.store(5)
        var server = RACPServer()
        server.faults.serverBusyResponses = 1
        server.faults.procedureInProgressRefusals = 1
        #expect(throws: RACPServer.WriteRefusal.procedureAlreadyInProgress) {
            try server.write([0x01, 0x01], indicationsEnabled: true, store: &store)
        }
        #expect(try Self.run([0x01, 0x01], store: &store, server: &server).responses == [[0x06, 0x00, 0x01, 0x0A]])
        server.faults.disconnectAfterRecords = 2
        let cut = try Self.run([0x01, 0x01], store: &store, server: &server)
        #expect(cut.records == [[1], [2]])
        #expect(cut.disconnected)
        #expect(cut.responses.isEmpty)
        // The fault fires once; the resumed report (≥ 3) completes.
        let resumed = try Self.run([0x01, 0x03, 0x01, 0x03, 0x00], store: &store, server: &server)
        #expect(resumed.records == [[3], [4], [5]])
        #expect(resumed.responses == [[0x06, 0x00, 0x01, 0x01]])
        server.faults.notCompletedAfterRecords = 1
        let partial = try Self.run([0x01, 0x01], store: &store, server: &server)
        #expect(partial.records == [[1]])
        #expect(partial.responses == [[0x06, 0x00, 0x01, 0x08]])
    }

    /// PLXS v1.0.1: only "all records".
    @Test func plxServerAcceptsOnlyAllRecords() throws {
        var store = Self.store(2)
        var server = RACPServer(allRecordsOnly: true)
        #expect(try Self.run([0x01, 0x05], store: &store, server: &server).responses == [[0x06, 0x00, 0x01, 0x04]])
        #expect(try Self.run([0x01, 0x01], store: &store, server: &server).records.count == 2)
    }

    /// Sequence numbers are uint16 and wrap (GLS): 65535 is followed by 0.
    @Test func sequenceNumbersWrap() {
        let store = Self.store(3, first: 0xFFFE)
        #expect(store.records.map(\.sequenceNumber) == [0xFFFE, 0xFFFF, 0x0000])
    }

    /// The request reader on arbitrary bytes (in place of a fuzz target, see the report): every 0–2 byte input and
    /// 200,000 seeded inputs of 3–7 bytes either refuse with a response code or give a request whose canonical
    /// bytes are exactly the input (nothing accepted is read loosely).
    @Test func requestReaderOnArbitraryBytes() {
        var inputs: [[UInt8]] = [[]]
        for a in 0...255 {
            inputs.append([UInt8(a)])
            for b in 0...255 { inputs.append([UInt8(a), UInt8(b)]) }
        }
        var random = SplitMix64(seed: 2026)
        for _ in 0..<200_000 {
            let count = Int.random(in: 3...7, using: &random)
            // Bias the first two bytes toward real op codes and operators so the operand paths are reached.
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            bytes[0] = UInt8.random(in: 0...7, using: &random)
            bytes[1] = UInt8.random(in: 0...7, using: &random)
            if count > 2 { bytes[2] = UInt8.random(in: 0...3, using: &random) }
            inputs.append(bytes)
        }
        var accepted = 0
        for input in inputs {
            switch RACPRequest.decode(input) {
            case .success(let request):
                accepted += 1
                #expect(request.bytes == input, "\(input)")
            case .failure(let refusal):
                #expect(refusal.code != .success)
            }
        }
        #expect(accepted > 1000)
    }
}
