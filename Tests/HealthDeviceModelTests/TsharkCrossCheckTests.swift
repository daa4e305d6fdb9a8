import Foundation
import HealthDeviceModel
import Testing
import TetherPrimitives
import TetherTestSupport

/// An independent decoder: the simulated devices' ATT notifications and indications, with the discovery Wireshark
/// needs to name the handles, written into a btsnoop file and decoded by Debian's tshark (scripts/setup installs
/// it). tshark's fields must equal what the device meant to send.
///
/// Found while writing this (tshark 4.0.17): the dissector names a value only after the capture's Read By Type
/// discovery of its characteristic declaration; it labels the RACP sequence-number operand "Min Time Offset" (one
/// field for GLS and CGMS); and it shows every Temperature Measurement FLOAT as 0 (even NaN), so temperature values
/// are checked by the golden vectors only, and here only their flags and time stamp.
@Suite struct TsharkCrossCheckTests {
    static let tshark = ["/usr/bin/tshark", "/usr/local/bin/tshark"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let start = Timestamp(nanoseconds: 1_700_000_000_000_000_000)

    /// Runs tshark over `snoop`, printing `fields` for every ATT notification, indication and write request.
    static func decode(_ snoop: BTSnoopWriter, fields: [String]) async throws -> [[String: String]] {
        let tshark = try #require(Self.tshark, "tshark is not installed (scripts/setup/install-deps.sh installs it)")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("health-\(getpid())-\(UUID().uuidString).btsnoop")
        try Data(snoop.file).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let result = try await ChildProcess.run(
            tshark,
            ["-r", path.path, "-Y", "btatt.opcode == 0x1b || btatt.opcode == 0x1d || btatt.opcode == 0x12", "-T", "fields",
             "-E", "separator=|", "-E", "occurrence=f"] + fields.flatMap { ["-e", $0] })
        #expect(result.status == 0, "\(result.standardError)")
        return result.lines.map { line in
            var row: [String: String] = [:]
            for (field, value) in zip(fields, line.split(separator: "|", omittingEmptySubsequences: false)) where !value.isEmpty {
                row[field] = String(value)
            }
            return row
        }
    }

    static func bonded(_ settings: HealthDeviceSettings) throws -> HealthDevice {
        var device = HealthDevice(settings: settings, now: start)
        try device.connected(encrypted: false, at: start)
        device.paired()
        return device
    }

    /// Sends every value the device has for `handle`'s connection into the capture, confirming indications.
    static func drain(_ device: inout HealthDevice, into snoop: inout BTSnoopWriter, link: UInt16) {
        while case .transmit(let t) = device.next(at: start) {
            let handle = BTSnoopWriter.valueHandle(of: t.characteristic, in: device.services) ?? 0
            snoop.att([t.delivery == .indicate ? 0x1D : 0x1B] + BTSnoopWriter.words([handle]) + t.value, handle: link, .deviceToHost)
            if t.delivery == .indicate {
                snoop.att([0x1E], handle: link, .hostToDevice)
                device.indicationConfirmed()
            }
        }
    }

    static func writeRequest(_ bytes: [UInt8], to uuid: UInt16, of device: inout HealthDevice, snoop: inout BTSnoopWriter, link: UInt16) throws {
        let handle = BTSnoopWriter.valueHandle(of: uuid, in: device.services) ?? 0
        snoop.att([0x12] + BTSnoopWriter.words([handle]) + bytes, handle: link, .hostToDevice)
        try device.write(uuid, bytes, at: start)
        snoop.att([0x13], handle: link, .deviceToHost)
    }

    @Test func glucoseRecordsAndRACPAsTsharkReadsThem() async throws {
        var settings = HealthDeviceSettings(kind: .glucose)
        settings.storedRecords = 5
        settings.firstSequenceNumber = 65_534
        settings.contextEvery = 2
        var device = try Self.bonded(settings)
        var snoop = BTSnoopWriter()
        snoop.discovery(of: device.services, handle: 0x0040)
        for uuid in [HealthUUID.glucoseMeasurement, HealthUUID.glucoseContext, HealthUUID.recordAccessControlPoint] {
            try device.subscribe(uuid, at: Self.start)
        }
        try Self.writeRequest([0x01, 0x01], to: HealthUUID.recordAccessControlPoint, of: &device, snoop: &snoop, link: 0x0040)
        Self.drain(&device, into: &snoop, link: 0x0040)
        try Self.writeRequest([0x04, 0x03, 0x01, 0x01, 0x00], to: HealthUUID.recordAccessControlPoint, of: &device, snoop: &snoop, link: 0x0040)
        Self.drain(&device, into: &snoop, link: 0x0040)
        let rows = try await Self.decode(snoop, fields: [
            "btatt.glucose_measurement.sequence_number", "btatt.glucose_measurement.glucose_concentration.kg_per_l",
            "btatt.glucose_measurement_context.sequence_number", "btatt.record_access_control_point.opcode",
            "btatt.record_access_control_point.operator", "btatt.record_access_control_point.request_opcode",
            "btatt.record_access_control_point.response_code", "btatt.record_access_control_point_operand.number_of_records",
            "btatt.record_access_control_point.operand.filter_type",
        ])
        // What the device meant: its store (sequence numbers, and the concentration it drew in mg/dL → kg/L).
        let meant = device.store.records.map { record in
            let value = record.transmissions[0].value
            let raw = UInt16(value[12]) | UInt16(value[13]) << 8
            return (record.sequenceNumber, Double(raw & 0x0FFF) * 1e-5)
        }
        let measurements = rows.filter { $0["btatt.glucose_measurement.sequence_number"] != nil }
        #expect(measurements.map { $0["btatt.glucose_measurement.sequence_number"] } == meant.map { "\($0.0)" })
        for (row, (_, kilogramsPerLitre)) in zip(measurements, meant) {
            let decoded = try #require(Double(row["btatt.glucose_measurement.glucose_concentration.kg_per_l"] ?? ""))
            #expect(abs(decoded - kilogramsPerLitre) < 1e-9, "\(row)")
        }
        #expect(rows.compactMap { $0["btatt.glucose_measurement_context.sequence_number"] } == ["65535", "1"])
        // The requests (op code, operator, filter type) and the responses (success; number of records 2).
        let racp = rows.filter { $0["btatt.record_access_control_point.opcode"] != nil }
        #expect(racp.map { $0["btatt.record_access_control_point.opcode"] } == ["1", "6", "4", "5"])
        #expect(racp.map { $0["btatt.record_access_control_point.operator"] } == ["1", "0", "3", "0"])
        #expect(racp[1]["btatt.record_access_control_point.request_opcode"] == "1")
        #expect(racp[1]["btatt.record_access_control_point.response_code"] == "1")
        #expect(racp[2]["btatt.record_access_control_point.operand.filter_type"] == "1")
        // ≥ 1 compares keys as numbers: 65534, 65535, 1 and 2 (not 0).
        #expect(racp[3]["btatt.record_access_control_point_operand.number_of_records"] == "4")
    }

    @Test func cuffHeartRateAndScaleAsTsharkReadsThem() async throws {
        var snoop = BTSnoopWriter()
        // A cuff with 3 stored readings, the second failed (NaN).
        var cuffSettings = HealthDeviceSettings(kind: .bloodPressure)
        cuffSettings.storedRecords = 3
        cuffSettings.faults.specialValues = [SpecialValueFault(measurement: 2, value: .nan)]
        var cuff = try Self.bonded(cuffSettings)
        let cuffMeant = cuff.store.records.map { record in
            let v = record.transmissions[0].value
            return (Int(v[1]) | Int(v[2]) << 8, Int(v[3]) | Int(v[4]) << 8, Int(v[14]), Int(v[16]))
        }
        snoop.discovery(of: cuff.services, handle: 0x0040)
        try cuff.subscribe(HealthUUID.bloodPressureMeasurement, at: Self.start)
        Self.drain(&cuff, into: &snoop, link: 0x0040)

        var strap = HealthDevice(settings: HealthDeviceSettings(kind: .heartRate), now: Self.start)
        try strap.connected(encrypted: false, at: Self.start)
        snoop.discovery(of: strap.services, handle: 0x0041)
        try strap.subscribe(HealthUUID.heartRateMeasurement, at: Self.start)
        strap.advance(to: Self.start.advanced(by: .seconds(180)))
        var strapValues: [[UInt8]] = []
        while case .transmit(let t) = strap.next(at: Self.start) {
            strapValues.append(t.value)
            let handle = BTSnoopWriter.valueHandle(of: t.characteristic, in: strap.services) ?? 0
            snoop.att([0x1B] + BTSnoopWriter.words([handle]) + t.value, handle: 0x0041, .deviceToHost)
        }

        var scaleSettings = HealthDeviceSettings(kind: .weightScale)
        scaleSettings.users = [HealthUser(index: 0, consentCode: 1111), HealthUser(index: 1, consentCode: 2222)]
        scaleSettings.storedRecords = 4
        var scale = try Self.bonded(scaleSettings)
        snoop.discovery(of: scale.services, handle: 0x0042)
        try scale.subscribe(HealthUUID.weightMeasurement, at: Self.start)
        try scale.subscribe(HealthUUID.userControlPoint, at: Self.start)
        try Self.writeRequest([0x02, 0x00, 0x57, 0x04], to: HealthUUID.userControlPoint, of: &scale, snoop: &snoop, link: 0x0042)
        Self.drain(&scale, into: &snoop, link: 0x0042)
        let scaleMeant = scale.sent.filter { $0.characteristic == HealthUUID.weightMeasurement }.map {
            (Int($0.value[1]) | Int($0.value[2]) << 8, Int($0.value[10]))
        }

        let rows = try await Self.decode(snoop, fields: [
            "btatt.blood_pressure_measurement.compound_value.systolic.mmhg",
            "btatt.blood_pressure_measurement.compound_value.diastolic.mmhg", "btatt.blood_pressure_measurement.pulse_rate",
            "btatt.blood_pressure_measurement.user_id", "btatt.heart_rate_measurement.value.8",
            "btatt.heart_rate_measurement.rr_interval", "btatt.weight_measurement.weight.kg", "btatt.weight_measurement.user_id",
        ])
        let pressures = rows.filter { $0["btatt.blood_pressure_measurement.compound_value.systolic.mmhg"] != nil }
        #expect(pressures.count == 3)
        for (row, meant) in zip(pressures, cuffMeant) {
            let systolic = meant.0 == 0x07FF ? "NaN" : "\(meant.0)"
            let diastolic = meant.1 == 0x07FF ? "NaN" : "\(meant.1)"
            #expect(row["btatt.blood_pressure_measurement.compound_value.systolic.mmhg"] == systolic)
            #expect(row["btatt.blood_pressure_measurement.compound_value.diastolic.mmhg"] == diastolic)
            #expect(row["btatt.blood_pressure_measurement.pulse_rate"] == "\(meant.2)")
            #expect(row["btatt.blood_pressure_measurement.user_id"] == String(format: "0x%02x", meant.3))
        }
        #expect(pressures[1]["btatt.blood_pressure_measurement.compound_value.systolic.mmhg"] == "NaN")
        let rates = rows.filter { $0["btatt.heart_rate_measurement.value.8"] != nil }
        #expect(rates.count == 3)
        #expect(rates.map { $0["btatt.heart_rate_measurement.value.8"] } == strapValues.map { "\($0[1])" })
        #expect(rates.map { $0["btatt.heart_rate_measurement.rr_interval"] } == strapValues.map { "\(Int($0[2]) | Int($0[3]) << 8)" })
        let weights = rows.filter { $0["btatt.weight_measurement.weight.kg"] != nil }
        #expect(weights.count == 2)
        #expect(weights.map { $0["btatt.weight_measurement.weight.kg"] } == scaleMeant.map { "\($0.0)" })
        #expect(weights.allSatisfy { $0["btatt.weight_measurement.user_id"] == "0" || $0["btatt.weight_measurement.user_id"] == "0x00" })
    }
}
