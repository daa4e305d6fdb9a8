import BlueZSimulator
import DBus
import Foundation
import HealthDeviceModel
import Testing
import TetherTestSupport

/// The time-write policy through a real tetherd and tether-sim's health devices (docs/design/health.md, "The
/// time-write rule"): what tetherd writes to a device's clock, when, and how the readings on either side of the write
/// are timed. Every time below is decoded here by hand from the bytes the device sent or received, not by Tether.
@Suite(.serialized) struct HealthTimeWriteTests {
    static let device = "C0:54:45:00:00:01"

    // MARK: - Hand decoding

    /// Seconds since 1970-01-01T00:00:00 of a civil date and time read as UTC (Howard Hinnant, "chrono-Compatible
    /// Low-Level Date Algorithms", days_from_civil).
    static func civilSeconds(_ year: Int, _ month: Int, _ day: Int, _ hours: Int, _ minutes: Int, _ seconds: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Int64(days * 86_400 + hours * 3600 + minutes * 60 + seconds)
    }

    /// A Date Time (GATT Specification Supplement, Date Time: year uint16 LE, month, day, hours, minutes, seconds)
    /// at `offset`: nil when the date is "not known" (year, month or day 0).
    static func dateTime(_ bytes: [UInt8], at offset: Int) -> Int64? {
        let year = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
        let (month, day) = (Int(bytes[offset + 2]), Int(bytes[offset + 3]))
        guard year != 0, month != 0, day != 0 else { return nil }
        return civilSeconds(year, month, day, Int(bytes[offset + 4]), Int(bytes[offset + 5]), Int(bytes[offset + 6]))
    }

    /// Blood Pressure Measurement (BLS v1.1.1 §3.1.1): flags, three SFLOAT pressures, then the Time Stamp when flags
    /// bit 1. Nil for a stamp that says "not known"; throws when there is none.
    static func cuffStamp(_ bytes: [UInt8]) throws -> Int64? {
        try #require(bytes.count >= 14 && bytes[0] & 0x02 != 0, "a time stamp: \(bytes)")
        return dateTime(bytes, at: 7)
    }

    /// Glucose Measurement (GLS v1.0 §3.106): flags, Sequence Number, Base Time, then the Time Offset (sint16
    /// minutes) when flags bit 0. The user-facing time is Base Time plus the offset.
    static func glucoseStamp(_ bytes: [UInt8]) throws -> Int64 {
        let base = try #require(dateTime(bytes, at: 3), "a known base time: \(bytes)")
        guard bytes[0] & 0x01 != 0 else { return base }
        return base + Int64(Int16(bitPattern: UInt16(bytes[10]) | UInt16(bytes[11]) << 8)) * 60
    }

    /// The Current Time values (0x2A2B) the device accepted, hand-decoded (CTS v1.1 §3.1: Date Time, Day of Week,
    /// Fractions256, Adjust Reason).
    static func currentTimeWrites(_ bed: DaemonTestBed) async throws -> [(seconds: Int64?, dayOfWeek: UInt8, adjustReason: UInt8)] {
        try await writes(bed).filter { $0.characteristic == 0x2A2B }.map { write in
            (write.bytes.count == 10 ? dateTime(write.bytes, at: 0) : nil, write.bytes.count == 10 ? write.bytes[7] : 0, write.bytes.last ?? 0)
        }
    }

    /// Every write the simulated device accepted, in order.
    static func writes(_ bed: DaemonTestBed) async throws -> [HealthWrite] {
        let path = DBusObjectPath("/org/bluez/hci0/dev_" + device.replacingOccurrences(of: ":", with: "_"))
        return await (try #require(await bed.simulator.device(at: path))).healthWrites
    }

    /// ISO 8601 weekday (Monday 1 … Sunday 7, as GSS Day of Week) of a day count since 1970-01-01, a Thursday.
    static func weekday(_ seconds: Int64) -> UInt8 {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        return UInt8(((days % 7) + 7 + 3) % 7 + 1)
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    static func samples(_ bed: DaemonTestBed, _ characteristic: String) async throws -> [[String: DBusValue]] {
        try await HealthControlTests.samples(bed, device).filter { $0["characteristic"]?.stringValue == characteristic }
    }

    // MARK: - Tests

    /// A cuff whose clock is not set (its Current Time and stamps say "not known") and tetherd's default
    /// (`when-not-set`): the stored readings it sends on connect are timed by receipt; tetherd writes its time at
    /// once (TimeWriteMoment rule 1), and the live reading after that is timed by the device's clock, set in UTC.
    @Test(.timeLimit(.minutes(4)))
    func aClockNotSetGetsTheGatewaysTimeAndLaterReadingsTheDeviceClock() async throws {
        var cuff = HealthDeviceSettings(kind: .bloodPressure)
        cuff.storedRecords = 2
        cuff.clockSet = false
        cuff.unsetClockReportsUnknownDate = true
        try await HealthControlTests.with([cuff]) { bed in
            try await bed.startDaemon()  // no [health] write_device_time: the default
            let start = Self.now()
            _ = try await bed.pair(Self.device)
            try await waitUntil("the cuff's two stored readings; log:\n\(bed.daemon?.logText ?? "")", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, "2A35").count { $0["metric"]?.stringValue == "blood_pressure_systolic" } == 2
            }
            let stored = try await Self.samples(bed, "2A35").filter { $0["metric"]?.stringValue == "blood_pressure_systolic" }
            for sample in stored {
                let bytes = HealthControlTests.bytes(hex: try #require(sample["raw"]?.stringValue))
                #expect(try Self.cuffStamp(bytes) == nil, "the stored reading's stamp says not known: \(bytes)")
                #expect(sample["time_basis"]?.stringValue == "receipt", "\(sample)")
            }

            // The one write: the gateway's time now, as a Current Time a person could read off the bytes.
            let writes = try await Self.currentTimeWrites(bed)
            #expect(writes.count == 1, "\(writes)")
            let written = try #require(writes.first)
            let seconds = try #require(written.seconds, "a known date was written")
            #expect((start - 2)...(Self.now() + 2) ~= seconds, "written \(seconds), test clock \(start)…\(Self.now())")
            #expect(written.dayOfWeek == Self.weekday(seconds))
            #expect(written.adjustReason == 0x01, "CTS v1.1 §3.1 Adjust Reason bit 0: manual time update")
            let device = try #require(try await HealthControlTests.healthDevice(bed, Self.device))
            #expect(device["clock_written_at"]?.int64Value != nil, "\(device)")

            // A live reading: stamped by the clock the gateway set, timed by it exactly.
            try await HealthControlTests.takeMeasurement(bed, Self.device)
            try await waitUntil("the live reading", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, "2A35").count { $0["metric"]?.stringValue == "blood_pressure_systolic" } == 3
            }
            // Not simply the newest: the stored ones are timed by receipt, which can be later than the live
            // reading's whole-second stamp.
            let storedUids = Set(stored.compactMap { $0["uid"]?.stringValue })
            let live = try #require(try await Self.samples(bed, "2A35").first {
                $0["metric"]?.stringValue == "blood_pressure_systolic" && !storedUids.contains($0["uid"]?.stringValue ?? "")
            })
            let bytes = HealthControlTests.bytes(hex: try #require(live["raw"]?.stringValue))
            let stamp = try #require(try Self.cuffStamp(bytes), "the live reading carries a known stamp: \(bytes)")
            #expect((start - 2)...(Self.now() + 2) ~= stamp, "stamp \(stamp)")
            #expect(live["time_basis"]?.stringValue == "clock-set-by-gateway", "\(live)")
            #expect(live["effective_at"]?.int64Value == stamp * 1_000_000_000, "\(live)")
            try await bed.stopDaemon()
        }
    }

    /// A glucose meter whose clock runs an hour ahead, with three stored records, and `when-drifted`: the write waits
    /// until the cold lane has taken all three with the clock as it was read (each corrected by that reading: an
    /// hour back); a record taken after the write is stamped by the corrected clock and timed by it as UTC.
    @Test(.timeLimit(.minutes(4)))
    func aDriftedClockIsWrittenOnlyAfterTheStoredRecordsWereTakenWithTheOldFacts() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 3
        meter.contextEvery = 0
        meter.clockSkewSeconds = 3_600
        try await HealthControlTests.with([meter]) { bed in
            try await bed.startDaemon(extra: """
                [health]
                write_device_time = "when-drifted"
                device_time_tolerance = "2m"
                """)
            let start = Self.now()
            _ = try await bed.pair(Self.device)
            try await waitUntil("the meter's three records; log:\n\(bed.daemon?.logText ?? "")", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, "2A18").count == 3
            }
            for record in try await Self.samples(bed, "2A18") {
                let stamp = try Self.glucoseStamp(HealthControlTests.bytes(hex: try #require(record["raw"]?.stringValue)))
                let effective = try #require(record["effective_at"]?.int64Value) / 1_000_000_000
                #expect(record["time_basis"]?.stringValue == "coincident-clock-reading", "\(record)")
                #expect((3_597...3_603).contains(stamp - effective), "stamp \(stamp), effective \(effective): the hour the clock was ahead")
            }

            // Then the write, with the gateway's (true) time, and the switch of both lanes.
            try await waitUntil("the clock written and the lanes switched", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await HealthControlTests.healthDevice(bed, Self.device)?["clock_written_at"]?.int64Value != nil
            }
            let writes = try await Self.currentTimeWrites(bed)
            #expect(writes.count == 1, "\(writes)")
            let written = try #require(writes.first?.seconds)
            #expect((start - 2)...(Self.now() + 2) ~= written, "written \(written): the true time, not the meter's hour ahead")

            // A record taken after the write: stamped by the set clock, timed by it exactly.
            try await HealthControlTests.takeMeasurement(bed, Self.device)
            let reply = try await bed.client.call("Backfill", [.string(Self.device)], timeout: .seconds(120))
            let result = try #require(reply.first?.arrayElements?.first?.variantDictionaryValue)
            #expect(result["outcome"]?.stringValue == "complete" && result["records_stored"]?.uint32Value == 1, "\(result)")
            let after = try await Self.samples(bed, "2A18")
            #expect(after.count == 4)
            let newest = try #require(after.first { $0["sequence"]?.int64Value == 4 }, "\(after)")
            let stamp = try Self.glucoseStamp(HealthControlTests.bytes(hex: try #require(newest["raw"]?.stringValue)))
            #expect((start - 2)...(Self.now() + 2) ~= stamp, "stamp \(stamp)")
            #expect(newest["time_basis"]?.stringValue == "clock-set-by-gateway", "\(newest)")
            #expect(newest["effective_at"]?.int64Value == stamp * 1_000_000_000, "\(newest)")
            // The three taken before the write kept their derivation.
            #expect(after.count { $0["time_basis"]?.stringValue == "coincident-clock-reading" } == 3)
            try await bed.stopDaemon()
        }
    }

    /// The meter drops the link after 5 records of the first report: that procedure did not take every stored record,
    /// so nothing is written on that connection (TimeWriteMoment rule 3); the next connection reads the clock as it
    /// still is (an hour ahead), takes all 20 records corrected by that reading, and only then writes.
    @Test(.timeLimit(.minutes(4)))
    func aTransferInterruptedBeforeTheWriteKeepsTheOldFactsOnTheNextConnection() async throws {
        var meter = HealthDeviceSettings(kind: .glucose)
        meter.storedRecords = 20
        meter.contextEvery = 0
        meter.clockSkewSeconds = 3_600
        meter.faults.racp.disconnectAfterRecords = 5
        try await HealthControlTests.with([meter]) { bed in
            try await bed.startDaemon(extra: "[health]\nwrite_device_time = \"when-drifted\"\n")
            let start = Self.now()
            _ = try await bed.pair(Self.device)
            try await waitUntil("all 20 records and the clock written; log:\n\(bed.daemon?.logText ?? "")", seconds: 120, every: .milliseconds(100), retryingErrors: true) {
                let stored = try await Self.samples(bed, "2A18").count
                let writes = try await Self.currentTimeWrites(bed)
                return stored == 20 && !writes.isEmpty
            }
            for record in try await Self.samples(bed, "2A18") {
                let stamp = try Self.glucoseStamp(HealthControlTests.bytes(hex: try #require(record["raw"]?.stringValue)))
                let effective = try #require(record["effective_at"]?.int64Value) / 1_000_000_000
                #expect(record["time_basis"]?.stringValue == "coincident-clock-reading", "\(record)")
                #expect((3_597...3_603).contains(stamp - effective), "stamp \(stamp), effective \(effective)")
            }
            let writes = try await Self.currentTimeWrites(bed)
            #expect(writes.count == 1, "\(writes)")
            let written = try #require(writes.first?.seconds)
            #expect((start - 2)...(Self.now() + 2) ~= written, "written \(written)")
            // The write came after two reports (RACP op code 0x01, Report stored records): the dropped one and the
            // next connection's.
            let all = try await Self.writes(bed)
            let at = try #require(all.firstIndex { $0.characteristic == 0x2A2B })
            #expect(all[..<at].count { $0.characteristic == 0x2A52 && $0.bytes.first == 0x01 } >= 2, "\(all)")
            try await bed.stopDaemon()
        }
    }

    /// `never`: not even a clock that is not set is written; every reading, the live one too, is timed by receipt.
    @Test(.timeLimit(.minutes(4)))
    func neverWritesNothing() async throws {
        var cuff = HealthDeviceSettings(kind: .bloodPressure)
        cuff.storedRecords = 1
        cuff.clockSet = false
        cuff.unsetClockReportsUnknownDate = true
        try await HealthControlTests.with([cuff]) { bed in
            try await bed.startDaemon(extra: "[health]\nwrite_device_time = \"never\"\n")
            _ = try await bed.pair(Self.device)
            try await waitUntil("the stored reading", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, "2A35").count { $0["metric"]?.stringValue == "blood_pressure_systolic" } == 1
            }
            // The live reading comes after the link's set-up, where a write would have been made.
            try await HealthControlTests.takeMeasurement(bed, Self.device)
            try await waitUntil("the live reading", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, "2A35").count { $0["metric"]?.stringValue == "blood_pressure_systolic" } == 2
            }
            let samples = try await Self.samples(bed, "2A35").filter { $0["metric"]?.stringValue == "blood_pressure_systolic" }
            for sample in samples {
                let bytes = HealthControlTests.bytes(hex: try #require(sample["raw"]?.stringValue))
                #expect(try Self.cuffStamp(bytes) == nil, "still not known: \(bytes)")
                #expect(sample["time_basis"]?.stringValue == "receipt", "\(sample)")
            }
            #expect(try await Self.currentTimeWrites(bed).isEmpty)
            #expect(try await HealthControlTests.healthDevice(bed, Self.device)?["clock_written_at"] == nil)
            try await bed.stopDaemon()
        }
    }

    /// PLX Spot-check Measurement (PLXS v1.0.1 §3.1.1): flags, SpO2 and PR (SFLOAT each), then the Timestamp when
    /// flags bit 0; flags bit 4 says "device clock is not set". The stamp, nil when it is not there or not known.
    static func spotCheck(_ bytes: [UInt8]) throws -> (clockNotSet: Bool, stamp: Int64?) {
        try #require(bytes.count >= 5, "a spot-check: \(bytes)")
        let stamped = bytes[0] & 0x01 != 0 && bytes.count >= 12
        return (bytes[0] & 0x10 != 0, stamped ? dateTime(bytes, at: 5) : nil)
    }

    /// A pulse oximeter whose clock was never set but counts from 2000-01-01, so its Current Time reads a date
    /// like any other and the connection's reading gives no reason to write under `when-not-set`. Its first
    /// spot-check says "device clock is not set": that value is timed by receipt, and tetherd writes its time at
    /// once (TimeWriteMoment rule 1, from the value); the next spot-check carries the clock the gateway set.
    @Test(.timeLimit(.minutes(4)))
    func aSpotCheckSayingTheClockIsNotSetGetsTheGatewaysTime() async throws {
        var oximeter = HealthDeviceSettings(kind: .pulseOximeter)
        oximeter.clockSet = false
        try await HealthControlTests.with([oximeter]) { bed in
            try await bed.startDaemon()
            let start = Self.now()
            _ = try await bed.pair(Self.device)
            try await waitUntil("the oximeter's link set up", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await HealthControlTests.healthDevice(bed, Self.device)?["connected"]?.boolValue == true
            }
            #expect(try await Self.currentTimeWrites(bed).isEmpty, "a clock reading from 2000 is no evidence by itself")

            try await HealthControlTests.takeMeasurement(bed, Self.device)
            try await waitUntil("the first spot-check", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, "2A5E").count { $0["metric"]?.stringValue == "oxygen_saturation" } == 1
            }
            let first = try #require(try await Self.samples(bed, "2A5E").first { $0["metric"]?.stringValue == "oxygen_saturation" })
            let firstBytes = HealthControlTests.bytes(hex: try #require(first["raw"]?.stringValue))
            #expect(try Self.spotCheck(firstBytes).clockNotSet, "the device said its clock is not set: \(firstBytes)")
            #expect(first["time_basis"]?.stringValue == "receipt", "\(first)")

            try await waitUntil("the write", seconds: 30, every: .milliseconds(100), retryingErrors: true) {
                try await !Self.currentTimeWrites(bed).isEmpty
            }
            let writes = try await Self.currentTimeWrites(bed)
            #expect(writes.count == 1, "\(writes)")
            let seconds = try #require(writes.first?.seconds, "a known date was written")
            #expect((start - 2)...(Self.now() + 2) ~= seconds, "written \(seconds), test clock \(start)…\(Self.now())")
            #expect(try await HealthControlTests.healthDevice(bed, Self.device)?["clock_written_at"]?.int64Value != nil)

            try await HealthControlTests.takeMeasurement(bed, Self.device)
            try await waitUntil("the second spot-check", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await Self.samples(bed, "2A5E").count { $0["metric"]?.stringValue == "oxygen_saturation" } == 2
            }
            let second = try #require(try await Self.samples(bed, "2A5E").first {
                $0["metric"]?.stringValue == "oxygen_saturation" && $0["uid"]?.stringValue != first["uid"]?.stringValue
            })
            let secondBytes = HealthControlTests.bytes(hex: try #require(second["raw"]?.stringValue))
            let (clockNotSet, stamp) = try Self.spotCheck(secondBytes)
            #expect(!clockNotSet, "set now: \(secondBytes)")
            let known = try #require(stamp, "the second spot-check is stamped: \(secondBytes)")
            #expect((start - 2)...(Self.now() + 2) ~= known, "stamp \(known)")
            #expect(second["time_basis"]?.stringValue == "clock-set-by-gateway", "\(second)")
            #expect(second["effective_at"]?.int64Value == known * 1_000_000_000, "\(second)")
            #expect(try await Self.currentTimeWrites(bed).count == 1, "written once")
            try await bed.stopDaemon()
        }
    }
}
