import HealthDeviceModel
import Testing
import TetherPrimitives

/// The device model: security, stored measurements, indication confirmation, the clock, users, faults, seeding.
@Suite struct HealthDeviceTests {
    static let start = Timestamp(nanoseconds: 1_700_000_000_000_000_000)

    static func drain(_ device: inout HealthDevice, confirming: Bool = true) -> [HealthTransmission] {
        var sent: [HealthTransmission] = []
        while let output = device.next(at: start) {
            guard case .transmit(let t) = output else { break }
            sent.append(t)
            if t.delivery == .indicate, confirming { device.indicationConfirmed() }
        }
        return sent
    }

    static func bondedConnection(_ settings: HealthDeviceSettings) throws -> HealthDevice {
        var device = HealthDevice(settings: settings, now: start)
        try device.connected(encrypted: false, at: start)
        device.paired()
        return device
    }

    @Test func glucoseMeterReportsEveryRecordWithItsContext() throws {
        var settings = HealthDeviceSettings(kind: .glucose)
        settings.storedRecords = 4
        var device = try Self.bondedConnection(settings)
        for uuid in [HealthUUID.glucoseMeasurement, HealthUUID.glucoseContext, HealthUUID.recordAccessControlPoint] {
            try device.subscribe(uuid, at: Self.start)
        }
        try device.write(HealthUUID.recordAccessControlPoint, [0x01, 0x01], at: Self.start)
        let sent = Self.drain(&device)
        let measurements = sent.filter { $0.characteristic == HealthUUID.glucoseMeasurement }
        let contexts = sent.filter { $0.characteristic == HealthUUID.glucoseContext }
        #expect(measurements.map { UInt16($0.value[1]) | UInt16($0.value[2]) << 8 } == [1, 2, 3, 4])
        // contextEvery 2: records 2 and 4 have the flag and a context with their sequence number right after.
        #expect(measurements.map { $0.value[0] & 0x10 != 0 } == [false, true, false, true])
        #expect(contexts.map { $0.value[1] } == [2, 4])
        #expect(sent.last?.value == [0x06, 0x00, 0x01, 0x01])
    }

    /// With `historyStartsAt` the memory is the same at every power-on (the power-cut rig restarts the simulator):
    /// a later power-on with more records holds the earlier one's records unchanged, and nothing after power-on.
    @Test func aFixedHistoryIsTheSameAtEveryPowerOn() {
        var settings = HealthDeviceSettings(kind: .glucose)
        settings.measurementIntervalSeconds = 1
        settings.historyStartsAt = Self.start.nanoseconds / 1_000_000_000 - 3600
        settings.storedRecords = 5
        let first = HealthDevice(settings: settings, now: Self.start)
        settings.storedRecords = 8
        let later = HealthDevice(settings: settings, now: Self.start.advanced(by: .seconds(90)))
        #expect(first.store.records.count == 5)
        #expect(Array(later.store.records.prefix(5)) == first.store.records)
        #expect(later.store.records.map(\.sequenceNumber) == Array(1...8))
        // 3600 records of 1 s fit before power-on; the 3601st would be taken after it.
        settings.storedRecords = 4000
        #expect(HealthDevice(settings: settings, now: Self.start).store.records.count == 3600)
    }

    /// GLS security: an unencrypted link gets ATT 0x05 on the CCCDs (BlueZ: NotPermitted "Not paired").
    @Test func securityRequiredOnUnbondedLinks() throws {
        var device = HealthDevice(settings: HealthDeviceSettings(kind: .glucose), now: Self.start)
        try device.connected(encrypted: false, at: Self.start)
        #expect(throws: ATTError.insufficientAuthentication) { try device.subscribe(HealthUUID.glucoseMeasurement, at: Self.start) }
        var strap = HealthDevice(settings: HealthDeviceSettings(kind: .heartRate), now: Self.start)
        try strap.connected(encrypted: false, at: Self.start)
        try strap.subscribe(HealthUUID.heartRateMeasurement, at: Self.start)
    }

    /// A cuff sends its stored readings once indications are on, one indication at a time, and forgets each only
    /// when it is confirmed.
    @Test func cuffSendsStoredReadingsAndWaitsForConfirmations() throws {
        var settings = HealthDeviceSettings(kind: .bloodPressure)
        settings.storedRecords = 3
        var device = try Self.bondedConnection(settings)
        try device.subscribe(HealthUUID.bloodPressureMeasurement, at: Self.start)
        guard case .transmit(let first) = device.next(at: Self.start) else { Issue.record("nothing sent"); return }
        #expect(first.delivery == .indicate)
        #expect(device.next(at: Self.start) == nil)  // waits for the confirmation
        #expect(device.store.records.count == 3)
        device.indicationConfirmed()
        #expect(device.store.records.count == 2)
        // A disconnect before the next confirmation keeps that reading stored.
        _ = device.next(at: Self.start)
        device.disconnected()
        #expect(device.store.records.count == 2)
    }

    @Test func cuffMeasurementNotifiesIntermediatePressuresThenIndicates() throws {
        var device = try Self.bondedConnection(HealthDeviceSettings(kind: .bloodPressure))
        try device.subscribe(HealthUUID.bloodPressureMeasurement, at: Self.start)
        try device.subscribe(HealthUUID.intermediateCuffPressure, at: Self.start)
        device.measure(at: Self.start)
        let sent = Self.drain(&device)
        #expect(sent.count >= 2)
        #expect(sent.dropLast().allSatisfy { $0.characteristic == HealthUUID.intermediateCuffPressure && $0.delivery == .notify })
        // Intermediate: diastolic and MAP NaN (BLS).
        #expect(sent.first.map { Array($0.value[3...6]) } == [0xFF, 0x07, 0xFF, 0x07])
        #expect(sent.last?.characteristic == HealthUUID.bloodPressureMeasurement)
        #expect(device.store.records.isEmpty)
    }

    @Test func specialValuesReplaceTheMainValue() throws {
        var settings = HealthDeviceSettings(kind: .bloodPressure)
        settings.storedRecords = 2
        settings.faults.specialValues = [SpecialValueFault(measurement: 2, value: .nan)]
        let device = HealthDevice(settings: settings, now: Self.start)
        let values = device.store.records.map { $0.transmissions[0].value }
        #expect(values[0][1...2] != [0xFF, 0x07])
        #expect(Array(values[1][1...6]) == [0xFF, 0x07, 0xFF, 0x07, 0xFF, 0x07])
        var meter = HealthDevice(settings: HealthDeviceSettings(kind: .glucose), now: Self.start)
        meter.injectSpecialValues(.nres, count: 1)
        meter.measure(at: Self.start)
        // Glucose concentration at bytes 12–13 (flags, seq, base time, offset).
        #expect(Array(meter.store.records[0].transmissions[0].value[12...13]) == [0x00, 0x08])
    }

    /// A clock never set counts from 2000-01-01; PLX says so in its flag; a Current Time write sets it.
    @Test func unsetClockAndCurrentTimeWrite() throws {
        var settings = HealthDeviceSettings(kind: .pulseOximeter)
        settings.clockSet = false
        settings.storedRecords = 1
        var device = HealthDevice(settings: settings, now: Self.start)
        let spot = device.store.records[0].transmissions[0].value
        #expect(spot[0] & 0x10 != 0)
        #expect(Array(spot[5...6]) == [0xD0, 0x07])  // year 2000
        try device.connected(encrypted: false, at: Self.start)
        // 2023-11-14 22:13:20, Tuesday, 0 fractions, manual update.
        try device.write(HealthUUID.currentTime, [0xE7, 0x07, 11, 14, 22, 13, 20, 2, 0, 1], at: Self.start)
        #expect(try device.read(HealthUUID.currentTime, at: Self.start).prefix(7) == [0xE7, 0x07, 11, 14, 22, 13, 20])
        #expect(throws: ATTError.outOfRange) {
            try device.write(HealthUUID.currentTime, [0xE7, 0x07, 13, 14, 22, 13, 20, 2, 0, 1], at: Self.start)
        }
    }

    @Test func skewedClockShowsInTheTimeStamps() throws {
        var settings = HealthDeviceSettings(kind: .thermometer)
        settings.clockSkewSeconds = 3600
        var device = HealthDevice(settings: settings, now: Self.start)
        try device.connected(encrypted: false, at: Self.start)
        // Start is 22:13:20 UTC; an hour ahead reads 23:13:20.
        #expect(try Array(device.read(HealthUUID.currentTime, at: Self.start)[4...6]) == [23, 13, 20])
    }

    /// UDS consent: the scale sends a user's stored weights only after that user's consent code.
    @Test func scaleWithTwoUsersNeedsConsent() throws {
        var settings = HealthDeviceSettings(kind: .weightScale)
        settings.users = [HealthUser(index: 0, consentCode: 1234), HealthUser(index: 1, consentCode: 4321)]
        settings.storedRecords = 4
        var device = try Self.bondedConnection(settings)
        try device.subscribe(HealthUUID.weightMeasurement, at: Self.start)
        #expect(Self.drain(&device).isEmpty)
        #expect(throws: ATTError.clientCharacteristicConfigurationImproperlyConfigured) {
            try device.write(HealthUUID.userControlPoint, [0x02, 0x01, 0xE1, 0x10], at: Self.start)
        }
        try device.subscribe(HealthUUID.userControlPoint, at: Self.start)
        try device.write(HealthUUID.userControlPoint, [0x02, 0x01, 0x00, 0x00], at: Self.start)  // wrong code
        #expect(Self.drain(&device).map(\.value) == [[0x20, 0x02, 0x05]])
        try device.write(HealthUUID.userControlPoint, [0x02, 0x01, 0xE1, 0x10], at: Self.start)  // 4321
        let sent = Self.drain(&device)
        #expect(sent.first?.value == [0x20, 0x02, 0x01])
        let weights = sent.filter { $0.characteristic == HealthUUID.weightMeasurement }
        #expect(weights.count == 2)
        #expect(weights.allSatisfy { $0.value[10] == 1 })  // user ID after flags, weight, time stamp
        #expect(try device.read(HealthUUID.userIndex, at: Self.start) == [1])
    }

    /// A reset that forgot the bond: the central's encrypted reconnect fails until it pairs again.
    @Test func staleBondAfterReset() throws {
        var device = try Self.bondedConnection(HealthDeviceSettings(kind: .glucose))
        device.disconnected()
        try device.connected(encrypted: true, at: Self.start)
        device.disconnected()
        device.reset(forgetBond: true, clearMemory: false, at: Self.start)
        #expect(throws: ATTError.insufficientAuthentication) { try device.connected(encrypted: true, at: Self.start) }
        try device.connected(encrypted: false, at: Self.start)
        device.paired()
        device.disconnected()
        try device.connected(encrypted: true, at: Self.start)
    }

    /// Memory cleared or meter replaced: numbering restarts below the gateway's cursor.
    @Test func sequenceReset() {
        var settings = HealthDeviceSettings(kind: .glucose)
        settings.storedRecords = 5
        settings.firstSequenceNumber = 100
        var device = HealthDevice(settings: settings, now: Self.start)
        #expect(device.store.records.last?.sequenceNumber == 104)
        device.reset(forgetBond: false, clearMemory: true, firstSequenceNumber: 1, at: Self.start)
        device.measure(at: Self.start)
        #expect(device.store.records.map(\.sequenceNumber) == [1])
    }

    /// A strap taken off sends nothing while off and resumes on the schedule's next tick once worn again (the demo
    /// stops it so that "every sample the gateway stored is on the server" can be checked at one moment).
    @Test func aStrapTakenOffStopsItsLiveMeasurementsUntilWornAgain() throws {
        var settings = HealthDeviceSettings(kind: .heartRate)
        settings.measurementIntervalSeconds = 1
        var strap = try Self.bondedConnection(settings)
        try strap.subscribe(HealthUUID.heartRateMeasurement, at: Self.start)
        strap.advance(to: Self.start.advanced(by: .seconds(3)))
        #expect(Self.drain(&strap).count == 3)
        strap.liveMeasurementsPaused = true
        strap.advance(to: Self.start.advanced(by: .seconds(10)))
        #expect(Self.drain(&strap).isEmpty)
        strap.liveMeasurementsPaused = false
        strap.advance(to: Self.start.advanced(by: .milliseconds(11_500)))
        #expect(Self.drain(&strap).count == 1)
    }

    @Test func cgmRecordsCarryTimeOffsetsAndCRC() throws {
        var settings = HealthDeviceSettings(kind: .cgm)
        settings.storedRecords = 3
        settings.measurementIntervalSeconds = 300
        var device = try Self.bondedConnection(settings)
        #expect(device.store.records.map(\.key) == [5, 10, 15])
        for uuid in [HealthUUID.cgmMeasurement, HealthUUID.recordAccessControlPoint] { try device.subscribe(uuid, at: Self.start) }
        // RACP ≥ time offset 10 (CGMS: filter type 0x01 is the time offset there).
        try device.write(HealthUUID.recordAccessControlPoint, [0x01, 0x03, 0x01, 0x0A, 0x00], at: Self.start)
        let records = Self.drain(&device).filter { $0.characteristic == HealthUUID.cgmMeasurement }
        #expect(records.count == 2)
        for record in records {
            let crc = CGMCRC.crc(record.value.dropLast(2))
            #expect(Array(record.value.suffix(2)) == [UInt8(crc & 0xFF), UInt8(crc >> 8)])
            #expect(Int(record.value[0]) == record.value.count)
        }
        device.advance(to: Self.start.advanced(by: .seconds(300)))
        #expect(Self.drain(&device).map { $0.value[4] } == [20])
    }

    @Test func aSeedReproducesTheDevice() {
        for kind in HealthDeviceKind.allCases {
            var settings = HealthDeviceSettings(kind: kind)
            settings.storedRecords = 8
            settings.users = [HealthUser(index: 0, consentCode: 1), HealthUser(index: 1, consentCode: 2)]
            settings.seed = 42
            let a = HealthDevice(settings: settings, now: Self.start)
            let b = HealthDevice(settings: settings, now: Self.start)
            #expect(a.store == b.store, "\(kind)")
            settings.seed = 43
            let c = HealthDevice(settings: settings, now: Self.start)
            if kind != .heartRate { #expect(a.store != c.store, "\(kind)") }
        }
    }
}
