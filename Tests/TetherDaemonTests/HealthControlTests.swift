import BlueZSimulator
import DBus
import Foundation
import HealthDeviceModel
import Synchronization
import Testing
import TetherTestSupport

/// The control API's health methods and signal (docs/specs/control-api.md, "Health") served by a real tetherd whose
/// devices are tether-sim's standard health devices, on a private bus.
@Suite(.serialized) struct HealthControlTests {
    static let cuff = "C0:54:45:00:00:01"
    static let meter = "C0:54:45:00:00:01"

    /// A test bed whose devices are these health devices (`C0:54:45:00:00:01`, …), just-works pairing.
    static func with(_ health: [HealthDeviceSettings], _ body: (DaemonTestBed) async throws -> Void) async throws {
        var configuration = DaemonTestBed.simulatorConfiguration(Array(repeating: .justWorks, count: health.count))
        for index in health.indices { configuration.devices[index].health = health[index] }
        try await DaemonTestBed.with(simulator: configuration, body)
    }

    static func samples(_ bed: DaemonTestBed, _ device: String, query: [String: DBusValue] = [:]) async throws -> [[String: DBusValue]] {
        try await bed.client.records("ListHealthSamples", [.string(device), .variantDictionary(query)])
    }

    static func healthDevice(_ bed: DaemonTestBed, _ address: String) async throws -> [String: DBusValue]? {
        try await bed.client.records("ListHealthDevices").first { $0["address"]?.stringValue == address }
    }

    /// The person measures now (tether-sim's io.tether.Simulator1.TakeMeasurement).
    static func takeMeasurement(_ bed: DaemonTestBed, _ address: String) async throws {
        let path = DBusObjectPath("/org/bluez/hci0/dev_" + address.replacingOccurrences(of: ":", with: "_"))
        let reply = try await bed.connection.call(
            destination: "org.bluez", path: "/io/tether/simulator", interface: "io.tether.Simulator1", member: "TakeMeasurement",
            arguments: [.objectPath(path), .variantDictionary([:])], timeout: .seconds(30))
        #expect(reply == [.bool(true)])
    }

    /// IEEE 11073-20601 Annex F.8 SFLOAT, decoded here by hand from the little-endian 16 bits (4-bit signed
    /// exponent, 12-bit signed mantissa), independently of the gateway's parser: nil for the special values
    /// (mantissa 0x07FF NaN, 0x0800 NRes, 0x07FE +INF, 0x0802 -INF, 0x0801 reserved, all with exponent 0).
    static func sfloat(_ low: UInt8, _ high: UInt8) -> (mantissa: Int, exponent: Int)? {
        let raw = Int(low) | Int(high) << 8
        let mantissaBits = raw & 0x0FFF
        if (0x07FE...0x0802).contains(mantissaBits) && raw >> 12 == 0 { return nil }
        let mantissa = mantissaBits >= 0x0800 ? mantissaBits - 0x1000 : mantissaBits
        let exponentBits = raw >> 12
        return (mantissa, exponentBits >= 8 ? exponentBits - 16 : exponentBits)
    }

    static func bytes(hex: String) -> [UInt8] {
        let characters = Array(hex)
        return stride(from: 0, to: characters.count - 1, by: 2).compactMap { UInt8(String(characters[$0...$0 + 1]), radix: 16) }
    }

    /// A cuff with two stored readings, the first a failed measurement (NaN), then a live one: the stored values
    /// come back with their unit and status; the intermediate cuff pressures of the live measurement reach the
    /// `HealthReading` signal and never the samples; the devices list counts them and shows the services.
    @Test(.timeLimit(.minutes(4)))
    func aCuffsReadingsAreListedAndItsIntermediatesOnlySignalled() async throws {
        var cuff = HealthDeviceSettings(kind: .bloodPressure)
        cuff.storedRecords = 2
        cuff.faults.specialValues = [SpecialValueFault(measurement: 1, value: .nan)]
        try await Self.with([cuff]) { bed in
            try await bed.startDaemon()
            let readings = try await bed.connection.signals(matching: DBusMatchRule(
                interface: "io.tether.Gateway1", member: "HealthReading", path: "/io/tether/Gateway"))
            _ = try await bed.pair(Self.cuff)

            // BLS v1.1.1 §3.1: the cuff indicates its stored readings once indications are on.
            try await waitUntil("the cuff's two stored readings stored; log:\n\(bed.daemon?.logText ?? "")", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, Self.cuff).count { $0["metric"]?.stringValue == "blood_pressure_systolic" } == 2
            }
            let stored = try await Self.samples(bed, Self.cuff)
            let systolic = stored.filter { $0["metric"]?.stringValue == "blood_pressure_systolic" }
            #expect(systolic.allSatisfy { $0["unit"]?.stringValue == "mm[Hg]" && $0["characteristic"]?.stringValue == "2A35" })
            #expect(systolic.allSatisfy { $0["lane"]?.stringValue == "hot" && $0["metric_code"]?.uint32Value == 150_021 })

            // The failed measurement: NaN is a status with no value, and its bytes really carry 0x07FF.
            let failed = try #require(systolic.first { $0["status"]?.stringValue == "nan" }, "\(systolic)")
            #expect(failed["value"] == nil && failed["canonical_value"] == nil)
            let failedBytes = Self.bytes(hex: try #require(failed["raw"]?.stringValue))
            #expect(failedBytes.count >= 3 && failedBytes[1] == 0xFF && failedBytes[2] == 0x07, "\(failedBytes)")
            // The pulse rate of the same record is still a number (only the pressures failed).
            let pulse = stored.filter { $0["metric"]?.stringValue == "pulse_rate_non_invasive" }
            #expect(pulse.count == 2 && pulse.allSatisfy { $0["status"]?.stringValue == "number" }, "\(stored.map { ($0["metric"], $0["status"], $0["value"]) })")

            // The good one: the value is the systolic SFLOAT the cuff sent (flags, then systolic: BLS §3.1.1).
            let good = try #require(systolic.first { $0["status"]?.stringValue == "number" })
            let goodBytes = Self.bytes(hex: try #require(good["raw"]?.stringValue))
            #expect(goodBytes[0] & 0x01 == 0, "flags bit 0 clear: mmHg")
            let sent = try #require(Self.sfloat(goodBytes[1], goodBytes[2]))
            #expect(sent.exponent == 0 && (100...150).contains(sent.mantissa), "the simulated cuff's systolic range")
            #expect(good["value"]?.stringValue == "\(sent.mantissa)")
            #expect(good["canonical_value"]?.stringValue == "\(sent.mantissa)" && good["canonical_unit"]?.stringValue == "mm[Hg]")

            // The device list: its service, connected, no RACP, and the count of what is stored.
            let device = try #require(try await Self.healthDevice(bed, Self.cuff))
            #expect(device["connected"]?.boolValue == true && device["adopted"]?.boolValue == true)
            #expect(device["services"]?.arrayElements?.compactMap(\.stringValue) == ["blood-pressure"])
            #expect(device["record_access"]?.arrayElements?.isEmpty == true)
            #expect(device["samples_stored"]?.uint64Value == UInt64(stored.count))
            #expect(device["last_sample_at"]?.int64Value == stored.compactMap { $0["effective_at"]?.int64Value }.max())

            // A live measurement: the cuff inflates (Intermediate Cuff Pressure 0x2A36 from 20 mmHg up), then
            // indicates the reading.
            try await Self.takeMeasurement(bed, Self.cuff)
            let signalled = Mutex<[[String: DBusValue]]>([])
            let live: [[String: DBusValue]]
            do {
                live = try await within(.seconds(90), "the live reading's signals") {
                    for await signal in readings {
                        guard let reading = signal.arguments.first?.variantDictionaryValue else { continue }
                        // The two stored readings were signalled too (the subscription came first): the live one is
                        // the third systolic. The intermediates come on another subscription (notify, where the
                        // reading is indicated), so the two may arrive in either order: wait for both.
                        let done = signalled.withLock { seen in
                            seen.append(reading)
                            return seen.contains { $0["intermediate"]?.boolValue == true }
                                && seen.count { $0["metric"]?.stringValue == "blood_pressure_systolic" } == 3
                        }
                        if done { break }
                    }
                    return signalled.withLock { $0 }
                }
            } catch {
                Issue.record("signalled: \(signalled.withLock { $0.map { ($0["characteristic"], $0["metric"], $0["value"], $0["intermediate"]) } })")
                throw error
            }
            let intermediates = live.filter { $0["intermediate"]?.boolValue == true }
            let first = try #require(intermediates.first, "\(live)")
            #expect(first["characteristic"]?.stringValue == "2A36" && first["metric"]?.stringValue == "cuff_pressure")
            #expect(first["value"]?.stringValue == "20" && first["unit"]?.stringValue == "mm[Hg]" && first["status"]?.stringValue == "number")
            #expect(first["address"]?.stringValue == Self.cuff)
            let liveSystolic = try #require(live.last { $0["metric"]?.stringValue == "blood_pressure_systolic" }?["value"]?.stringValue)

            try await waitUntil("the live reading stored", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, Self.cuff).count { $0["metric"]?.stringValue == "blood_pressure_systolic" } == 3
            }
            let after = try await Self.samples(bed, Self.cuff)
            // Newest first: the live reading heads the list, with the value the signal showed.
            #expect(after.first { $0["metric"]?.stringValue == "blood_pressure_systolic" }?["value"]?.stringValue == liveSystolic)
            #expect(!after.contains { $0["characteristic"]?.stringValue == "2A36" || $0["metric"]?.stringValue == "cuff_pressure" })
            // Bounded by limit, newest first.
            let two = try await Self.samples(bed, Self.cuff, query: ["limit": .uint32(2)])
            #expect(two.count == 2)
            #expect(two.map { $0["uid"] } == after.prefix(2).map { $0["uid"] })
            // `since` after every sample: none.
            let times = after.compactMap { $0["effective_at"]?.int64Value }
            let newest = try #require(times.max())
            #expect(try await Self.samples(bed, Self.cuff, query: ["since": .int64(newest + 1)]).isEmpty)

            // No RACP on a cuff: a backfill is refused, and an unknown device is named so.
            await expectError("NotPermitted") { _ = try await bed.client.call("Backfill", [.string(Self.cuff)]) }
            await expectError("UnknownDevice") { _ = try await bed.client.call("Backfill", [.string("C0:54:45:00:00:99")]) }
            await expectError("UnknownDevice") { _ = try await Self.samples(bed, "C0:54:45:00:00:99") }
            try await bed.stopDaemon()
        }
    }

    /// A thermometer streams Intermediate Temperature (HTS v1.0 §3.3, notify) while it measures: each value reaches
    /// the `HealthReading` signal in °C, marked intermediate, and none is ever stored; its stored Temperature
    /// Measurement (0x2A1C) is.
    @Test(.timeLimit(.minutes(4)))
    func aThermometersIntermediateTemperaturesAreSignalledNeverStored() async throws {
        var thermometer = HealthDeviceSettings(kind: .thermometer)
        thermometer.storedRecords = 1
        thermometer.measurementIntervalSeconds = 0.5
        try await Self.with([thermometer]) { bed in
            try await bed.startDaemon()
            let readings = try await bed.connection.signals(matching: DBusMatchRule(
                interface: "io.tether.Gateway1", member: "HealthReading", path: "/io/tether/Gateway"))
            _ = try await bed.pair(Self.cuff)
            // Two intermediates: the session hands a characteristic's values over one at a time, so once the second
            // is signalled the first has been through the hot lane's decision (and any store) completely.
            let intermediates = try await within(.seconds(90), "two intermediate temperatures") {
                var seen: [[String: DBusValue]] = []
                for await signal in readings {
                    guard let reading = signal.arguments.first?.variantDictionaryValue,
                        reading["characteristic"]?.stringValue == "2A1E"
                    else { continue }
                    seen.append(reading)
                    if seen.count == 2 { break }
                }
                return seen
            }
            for reading in intermediates {
                #expect(reading["intermediate"]?.boolValue == true && reading["metric"]?.stringValue == "body_temperature")
                #expect(reading["unit"]?.stringValue == "Cel" && reading["status"]?.stringValue == "number")
                // The simulated thermometer's intermediate range: 35.0 to 38.0 °C in tenths (a FLOAT, exponent −1).
                let value = try #require(reading["value"]?.stringValue)
                let tenths = try #require(Int(value.replacingOccurrences(of: ".", with: "")), "\(value)")
                #expect(value.split(separator: ".").last?.count == 1 && (350...380).contains(tenths), "\(value)")
            }
            try await waitUntil("the stored temperature", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, Self.cuff).contains { $0["characteristic"]?.stringValue == "2A1C" }
            }
            let samples = try await Self.samples(bed, Self.cuff)
            #expect(!samples.contains { $0["characteristic"]?.stringValue == "2A1E" }, "\(samples)")
            #expect(samples.allSatisfy { $0["unit"]?.stringValue == "Cel" && $0["lane"]?.stringValue == "hot" })
            try await bed.stopDaemon()
        }
    }

    /// A glucose meter keeps its records behind a RACP (GLS §3.4): the cold lane takes the three stored ones on
    /// connect; two taken while connected are not sent by themselves, and `Backfill` reads exactly those two and
    /// says so; the cursor moves to the last.
    @Test(.timeLimit(.minutes(4)))
    func backfillReadsTheRecordsAGlucoseMeterTookWhileConnected() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 3
        meter.contextEvery = 0
        try await Self.with([meter]) { bed in
            try await bed.startDaemon()
            _ = try await bed.pair(Self.meter)
            func glucose() async throws -> [[String: DBusValue]] {
                try await Self.samples(bed, Self.meter).filter { $0["metric"]?.stringValue == "glucose" }
            }
            func cursor() async throws -> [String: DBusValue]? {
                try await Self.healthDevice(bed, Self.meter)?["cursors"]?.arrayElements?.first?.variantDictionaryValue
            }
            try await waitUntil("the meter's three records and their cursor; log:\n\(bed.daemon?.logText ?? "")", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                let position = try await cursor()?["position"]?.int64Value
                return try await glucose().count == 3 && position == 3
            }
            let device = try #require(try await Self.healthDevice(bed, Self.meter))
            #expect(device["record_access"]?.arrayElements?.compactMap(\.stringValue) == ["glucose"])
            let first = try #require(try await cursor())
            #expect(first["characteristic"]?.stringValue == "2A18" && first["kind"]?.stringValue == "sequence" && first["epoch"]?.uint32Value == 0)
            let records = try await glucose()
            #expect(records.allSatisfy { $0["lane"]?.stringValue == "cold" && $0["status"]?.stringValue == "number" })
            // GLS §3.2: kg/L as reported, mg/dL canonical (1 mg/dL = 1e-5 kg/L, converted exactly).
            #expect(records.allSatisfy { $0["unit"]?.stringValue == "kg/L" && $0["canonical_unit"]?.stringValue == "mg/dL" })
            #expect(Set(records.compactMap { $0["sequence"]?.int64Value }) == [1, 2, 3])
            // Each value is the concentration the meter sent: GLS §3.106 layout (flags, sequence number, base time,
            // the time offset when flags bit 0, then the SFLOAT concentration when flags bit 1), in kg/L with
            // exponent −5, which is mg/dL exactly (1 mg/dL = 10⁻⁵ kg/L).
            for record in records {
                let bytes = Self.bytes(hex: try #require(record["raw"]?.stringValue))
                #expect(bytes[0] & 0x02 != 0, "concentration present")
                let at = 10 + (bytes[0] & 0x01 != 0 ? 2 : 0)
                let sent = try #require(Self.sfloat(bytes[at], bytes[at + 1]))
                #expect(sent.exponent == -5 && (70...250).contains(sent.mantissa), "the simulated meter's range")
                #expect(record["canonical_value"]?.stringValue == "\(sent.mantissa)", "\(record)")
            }

            try await Self.takeMeasurement(bed, Self.meter)
            try await Self.takeMeasurement(bed, Self.meter)
            let reply = try await bed.client.call("Backfill", [.string(Self.meter)], timeout: .seconds(120))
            let results = try #require(reply.first?.arrayElements).compactMap(\.variantDictionaryValue)
            #expect(results.count == 1)
            let result = try #require(results.first)
            #expect(result["service"]?.stringValue == "glucose")
            #expect(result["outcome"]?.stringValue == "complete", "\(result)")
            #expect(result["records_stored"]?.uint32Value == 2)
            #expect(result["cursor_position"]?.int64Value == 5)
            let after = try await glucose()
            #expect(after.count == 5)
            #expect(Set(after.compactMap { $0["sequence"]?.int64Value }) == [1, 2, 3, 4, 5])
            #expect(try await cursor()?["position"]?.int64Value == 5)

            // Nothing new: a second backfill completes and stores nothing.
            let again = try await bed.client.call("Backfill", [.string(Self.meter)], timeout: .seconds(120))
            let second = try #require(again.first?.arrayElements?.first?.variantDictionaryValue)
            #expect(second["outcome"]?.stringValue == "complete" && second["records_stored"]?.uint32Value == 0)
            #expect(try await glucose().count == 5)
            try await bed.stopDaemon()
        }
    }

    func expectError(_ name: String, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected io.tether.Gateway1.Error.\(name)")
        } catch let error as DBusError {
            #expect(error.name == "io.tether.Gateway1.Error.\(name)", "\(error)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
