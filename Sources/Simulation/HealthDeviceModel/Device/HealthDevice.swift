import TetherPrimitives

/// A standard Bluetooth health device, pure and seeded: facts in (`connected`, `subscribed`, `written`, `advance`,
/// `indicationConfirmed`), values out (`next()`), time passed in with every call.
///
/// Rules (everything that decides what the device sends lives in this file and HealthDevice+Readings.swift):
/// 1. A value goes out only while its CCCD is enabled on the current connection; an indication waits for the
///    confirmation of the previous one (Core v5.3 Vol 3 Part F §3.4.7.2).
/// 2. A characteristic whose profile requires security refuses reads, writes and its CCCD on an unencrypted link
///    with ATT 0x05 (HealthGattLayout).
/// 3. Cuff, thermometer and scale send their stored measurements once their measurement CCCD is enabled (BLP v1.1.1,
///    HTP v1.0 and WSP v1.0 on stored measurements) and forget each once it is confirmed; glucose, PLX spot-check
///    and CGM keep theirs and send them through the RACP (RACPServer).
/// 4. A scale sends a user's stored measurements only after that user's consent on this connection (UDS v1.0,
///    User Control Point, Consent).
/// 5. A device reset with the bond forgotten refuses an encrypted link until the central pairs again.
public struct HealthDevice: Sendable {
    public enum Output: Hashable, Sendable {
        case transmit(HealthTransmission)
        /// The device drops the link (a fault).
        case disconnect
    }

    public let settings: HealthDeviceSettings
    public let services: [HealthServiceDeclaration]
    public internal(set) var clock: HealthDeviceClock
    public internal(set) var store: RecordStore
    public internal(set) var racp: RACPServer
    var random: SplitMix64
    var measurementsTaken = 0
    var upcomingSpecials: [MedicalFloatSpecial] = []
    /// Glucose measurements still to be taken as error records (`injectErrorRecords`).
    var upcomingErrorRecords = 0
    var nextLiveMeasurement: Timestamp
    /// Live measurements stop while the person is not wearing the sensor (a strap taken off, a finger out of the
    /// oximeter); the schedule keeps running, so they resume on the next tick after it is worn again.
    public var liveMeasurementsPaused = false
    /// CGM: the session start (true time) and the device clock's reading then.
    let sessionStartedAt: Timestamp
    var sessionStartReading: Int64

    // The connection.
    public private(set) var isConnected = false
    public private(set) var isEncrypted = false
    var enabled: Set<UInt16> = []
    var outbox: [HealthTransmission] = []
    public private(set) var awaitingConfirmation: HealthTransmission?
    var consentedUser: UInt8?
    /// The device remembers a bond with the central (false after a reset that forgot it).
    public private(set) var hasBond = false
    var bondForgotten: Bool
    var databaseChangeIncrement: UInt32 = 0
    /// Multi-user scale: the registered users and the user of each stored measurement.
    public internal(set) var users: [HealthUser]
    var recordUsers: [UInt16: UInt8] = [:]

    /// Every value the device sent, in order: the oracle for tests and the btsnoop writer.
    public private(set) var sent: [HealthTransmission] = []

    public init(settings: HealthDeviceSettings, serial: String = "HS00000001", now: Timestamp) {
        self.settings = settings
        services = HealthGattLayout.services(kind: settings.kind, serial: serial, e2eCRC: settings.e2eCRC)
        clock = HealthDeviceClock(
            set: settings.clockSet, skewSeconds: settings.clockSkewSeconds, poweredOnAt: now,
            reportsUnknownDateWhenNotSet: settings.unsetClockReportsUnknownDate)
        store = RecordStore(firstSequenceNumber: settings.firstSequenceNumber)
        racp = RACPServer(allRecordsOnly: settings.kind == .pulseOximeter)
        racp.faults = settings.faults.racp
        random = SplitMix64(seed: settings.seed)
        bondForgotten = settings.faults.bondForgotten
        users = settings.users
        let interval = Self.duration(seconds: settings.measurementIntervalSeconds)
        let historyStart = settings.historyStartsAt.map { Timestamp(nanoseconds: $0 * 1_000_000_000) }
            ?? now.advanced(by: .zero - interval * max(settings.storedRecords, 0))
        sessionStartedAt = historyStart
        sessionStartReading = 0
        nextLiveMeasurement = now.advanced(by: interval)
        sessionStartReading = clock.reading(at: historyStart)
        for index in 0..<max(settings.storedRecords, 0) {
            let takenAt = historyStart.advanced(by: interval * (index + 1))
            guard takenAt <= now else { break }
            let user = settings.users.isEmpty ? nil : settings.users[index % settings.users.count].index
            takeMeasurement(at: takenAt, live: false, user: user)
        }
    }

    static func duration(seconds: Double) -> Duration { .nanoseconds(Int64(max(seconds, 0.001) * 1e9)) }
    var interval: Duration { Self.duration(seconds: settings.measurementIntervalSeconds) }

    public func declaration(of uuid: UInt16) -> HealthCharacteristicDeclaration? {
        services.lazy.flatMap(\.characteristics).first { $0.uuid == uuid }
    }

    // MARK: - Link

    /// A central connected. `encrypted`: the central holds a bond and asks for encryption. Throws
    /// insufficientAuthentication when the device forgot that bond (the central's stale keys fail).
    public mutating func connected(encrypted: Bool, at now: Timestamp) throws(ATTError) {
        if encrypted, bondForgotten || !hasBond {
            throw .insufficientAuthentication
        }
        isConnected = true
        isEncrypted = encrypted
        enabled = []
        outbox = []
        awaitingConfirmation = nil
        consentedUser = nil
    }

    /// The device powers on remembering a bond made before (its flash kept the keys), as bluetoothd loads its own
    /// side of a bond from storage (`DeviceConfiguration.bonded`): an encrypted reconnect works without pairing.
    /// A configured `bondForgotten` fault still wins.
    public mutating func rememberBond() {
        hasBond = true
    }

    /// Pairing completed on this link: bonded and encrypted.
    public mutating func paired() {
        hasBond = true
        bondForgotten = false
        isEncrypted = true
    }

    public mutating func disconnected() {
        isConnected = false
        isEncrypted = false
        enabled = []
        outbox = []
        // An unconfirmed indication is not delivered: a stored measurement stays stored.
        awaitingConfirmation = nil
        racp.linkLost()
        consentedUser = nil
    }

    /// Records leave the memory without the central asking: a person deletes readings on the meter, or a full
    /// memory drops its oldest. Returns how many of the stored records were keyed within `keys`.
    @discardableResult
    public mutating func forgetRecords(keyed keys: ClosedRange<UInt16>) -> Int {
        store.delete(.range(keys.lowerBound, keys.upperBound))
    }

    /// The device was reset: it forgets its bond (the central keeps its stale keys) and optionally its memory.
    public mutating func reset(forgetBond: Bool, clearMemory: Bool, firstSequenceNumber: UInt16 = 1, at now: Timestamp) {
        if forgetBond {
            hasBond = false
            bondForgotten = true
        }
        if clearMemory {
            store.reset(firstSequenceNumber: firstSequenceNumber)
            clock.lose(at: now)
        }
    }

    // MARK: - GATT

    func requireSecurity(_ uuid: UInt16) throws(ATTError) {
        guard let declaration = declaration(of: uuid) else { throw .requestNotSupported }
        if declaration.requiresEncryption, !isEncrypted { throw .insufficientAuthentication }
    }

    /// The client wrote the CCCD of `uuid` (enable notifications or indications).
    public mutating func subscribe(_ uuid: UInt16, at now: Timestamp) throws(ATTError) {
        try requireSecurity(uuid)
        guard let declaration = declaration(of: uuid),
            declaration.properties.contains(.notify) || declaration.properties.contains(.indicate)
        else { throw .requestNotSupported }
        guard enabled.insert(uuid).inserted else { return }
        storedMeasurementsOnSubscribe(uuid)
    }

    public mutating func unsubscribe(_ uuid: UInt16) {
        enabled.remove(uuid)
    }

    public func isEnabled(_ uuid: UInt16) -> Bool { enabled.contains(uuid) }

    public mutating func read(_ uuid: UInt16, at now: Timestamp) throws(ATTError) -> [UInt8] {
        try requireSecurity(uuid)
        guard let declaration = declaration(of: uuid), declaration.properties.contains(.read) else {
            throw .readNotPermitted
        }
        if let fixed = declaration.fixedValue { return fixed }
        switch uuid {
        case HealthUUID.currentTime:
            if clock.reportsUnknownDate {
                // Day of Week 0 and Fractions256 0: "not known" too (GSS, Day of Week; Exact Time 256).
                return CurrentTimeValue(dateTime: HealthDeviceClock.unknownDate, dayOfWeek: 0, fractions256: 0, adjustReason: 0).bytes
            }
            return CurrentTimeValue(localNanoseconds: clock.reading(at: now)).bytes
        case HealthUUID.cgmSessionStartTime:
            return CGMSessionStartTimeValue(
                start: DateTimeField(secondsSinceEpoch: sessionStartReading / 1_000_000_000), timeZoneQuarterHours: 0,
                dstOffset: 0
            ).bytes(withCRC: settings.e2eCRC)
        case HealthUUID.userIndex:
            return [consentedUser ?? 0xFF]  // UDS v1.0: 0xFF = unknown user
        case HealthUUID.databaseChangeIncrement:
            var writer = ByteWriter()
            writer.write(databaseChangeIncrement)
            return writer.bytes
        default:
            throw .readNotPermitted
        }
    }

    public mutating func write(_ uuid: UInt16, _ bytes: [UInt8], at now: Timestamp) throws(ATTError) {
        try requireSecurity(uuid)
        guard let declaration = declaration(of: uuid), declaration.properties.contains(.write) else {
            throw .writeNotPermitted
        }
        switch uuid {
        case HealthUUID.recordAccessControlPoint:
            do {
                try racp.write(bytes, indicationsEnabled: enabled.contains(uuid), store: &store)
            } catch {
                throw ATTError(rawValue: error.rawValue) ?? .outOfRange
            }
        case HealthUUID.currentTime:
            try writeCurrentTime(bytes, at: now)
        case HealthUUID.userControlPoint:
            try userControlPoint(bytes)
        case HealthUUID.databaseChangeIncrement:
            guard bytes.count == 4 else { throw .invalidAttributeValueLength }
            var reader = ByteReader(bytes)
            databaseChangeIncrement = reader.readUInt32() ?? databaseChangeIncrement
        case HealthUUID.cgmSessionStartTime:
            guard bytes.count == (settings.e2eCRC ? 11 : 9) else { throw .invalidAttributeValueLength }
        default:
            throw .writeNotPermitted
        }
    }

    /// CTS v1.1: a written Current Time sets the clock (10 bytes; date fields checked, else Out of Range,
    /// "Data field ignored" = 0x80 in CTS, simplified here to 0xFF).
    mutating func writeCurrentTime(_ bytes: [UInt8], at now: Timestamp) throws(ATTError) {
        guard bytes.count == 10 else { throw .invalidAttributeValueLength }
        let year = Int64(bytes[0]) | Int64(bytes[1]) << 8
        let (month, day, hour, minute, second) = (Int64(bytes[2]), Int64(bytes[3]), Int64(bytes[4]), Int64(bytes[5]), Int64(bytes[6]))
        guard (1582...9999).contains(year), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
            second < 60
        else { throw .outOfRange }
        // Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second
        clock.set(to: seconds * 1_000_000_000 + Int64(bytes[8]) * 1_000_000_000 / 256, at: now)
    }

    // MARK: - Sending

    /// The next value to send now, or nil: nothing to send, or an indication still waits for its confirmation.
    public mutating func next(at now: Timestamp) -> Output? {
        guard isConnected, awaitingConfirmation == nil else { return nil }
        while true {
            let candidate: HealthTransmission
            if !outbox.isEmpty {
                candidate = outbox.removeFirst()
            } else if let output = racp.next() {
                switch output {
                case .disconnect: return .disconnect
                case .transmit(let transmission): candidate = transmission
                }
            } else {
                return nil
            }
            // Rule 1: nothing goes out on a characteristic whose CCCD is off (a RACP record for an unsubscribed
            // measurement characteristic is lost, as on a real device).
            guard enabled.contains(candidate.characteristic) else { continue }
            if candidate.delivery == .indicate { awaitingConfirmation = candidate }
            sent.append(candidate)
            return .transmit(candidate)
        }
    }

    /// The central confirmed the outstanding indication (BlueZ does so itself on receipt).
    public mutating func indicationConfirmed() {
        guard let confirmed = awaitingConfirmation else { return }
        awaitingConfirmation = nil
        storedMeasurementConfirmed(confirmed)
    }

    /// Time passes: live measurements fall due.
    public mutating func advance(to now: Timestamp) {
        while nextLiveMeasurement <= now {
            let at = nextLiveMeasurement
            nextLiveMeasurement = nextLiveMeasurement.advanced(by: interval)
            if !liveMeasurementsPaused { liveTick(at: at) }
        }
    }

    /// The person takes a measurement now (a cuff inflates, a strip goes into the meter, someone steps on the scale).
    public mutating func measure(at now: Timestamp, user: UInt8? = nil) {
        takeMeasurement(at: now, live: true, user: user)
    }

    /// The RACP server's faults, changed at run time (io.tether.Simulator1).
    public var racpFaults: RACPServer.Faults {
        get { racp.faults }
        set { racp.faults = newValue }
    }

    /// The clock battery ran flat: the clock is not set any more.
    public mutating func loseClock(at now: Timestamp) {
        clock.lose(at: now)
    }

    /// The next `count` measurements report `special` as their main value (the NaN/NRes fault).
    public mutating func injectSpecialValues(_ special: MedicalFloatSpecial, count: Int) {
        upcomingSpecials += Array(repeating: special, count: max(count, 0))
    }

    /// The next `count` glucose measurements fail: each is stored as a record with no concentration and the Sensor
    /// Status Annunciation "strip insertion error" (GLS v1.0.1 §3.106.2: the concentration field is optional, flag
    /// bit 1), as a meter keeps a failed test in its memory.
    public mutating func injectErrorRecords(count: Int) {
        upcomingErrorRecords += max(count, 0)
    }
}
