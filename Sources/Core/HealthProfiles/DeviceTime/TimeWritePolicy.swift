import TetherPrimitives

/// Decides whether to write the gateway's time to a device, and what bytes (issue 14, item 1: when configured,
/// and always when the device reports its clock is not set). Pure: facts in, a decision out.
///
/// The gateway always writes UTC, so that what it reads back later means UTC (`TimeBasis.clockSetByGateway`);
/// where Local Time Information is writable it is set to zone 0, standard time, so that a device that shows or
/// stamps local time shows the same UTC. Apps that wrote local time and read it back as UTC are the field bug this
/// avoids (openScale PR#1427, #923).
public enum TimeWritePolicy {
    /// What tetherd's configuration asks for (its `[health] write_device_time` key).
    public enum Mode: Hashable, Sendable {
        /// Never, not even a clock that is not set (another collector owns the device's clock): readings from such
        /// a clock keep their time of receipt.
        case never
        /// Only when the device says its clock is not set.
        case whenClockNotSet
        /// Whenever the measured skew is larger than this (and when the clock is not set).
        case whenSkewExceeds(Duration)
        /// On every connection.
        case always
    }

    /// Which characteristic the device lets the gateway write, as its profile says.
    public enum Target: Hashable, Sendable {
        /// Current Time (0x2A2B), writable in CTS v1.1 when the server allows it.
        case currentTime(alsoLocalTimeInformation: Bool)
        /// A writable Date Time (0x2A08), as some profiles' devices expose instead of CTS.
        case dateTime
        case notWritable
    }

    /// Why a device's clock counts as not set.
    public enum ClockNotSetEvidence: Hashable, Sendable {
        /// PLX Spot-check Measurement flags: "device clock is not set" (PLXS v1.0).
        case plxDeviceClockNotSet
        /// A Date Time read or received with year, month or day 0 ("not known", GSS Date Time).
        case dateNotKnown
        /// The device's own status says so (CGM status "time synchronization between sensor and collector
        /// required", a vendor flag…).
        case deviceStatus
    }

    public struct Facts: Hashable, Sendable {
        public var mode: Mode
        public var target: Target
        public var clockNotSet: ClockNotSetEvidence?
        /// `DerivedTime.skew` from this connection's reading of the clock, if any.
        public var measuredSkew: Duration?
        /// The gateway's time now, UTC.
        public var now: Timestamp

        public init(mode: Mode, target: Target, clockNotSet: ClockNotSetEvidence? = nil, measuredSkew: Duration? = nil, now: Timestamp) {
            self.mode = mode
            self.target = target
            self.clockNotSet = clockNotSet
            self.measuredSkew = measuredSkew
            self.now = now
        }
    }

    /// One characteristic write.
    public struct Write: Hashable, Sendable {
        public var characteristic: UInt16
        public var bytes: [UInt8]

        public init(characteristic: UInt16, bytes: [UInt8]) {
            self.characteristic = characteristic
            self.bytes = bytes
        }
    }

    public enum Reason: Hashable, Sendable {
        case clockNotSet(ClockNotSetEvidence)
        case configuredAlways
        case skewExceeded(Duration)
        case notWritable
        case withinTolerance
        case notConfigured
        /// The gateway's own clock is outside what a Date Time can hold.
        case gatewayTimeNotRepresentable
    }

    public enum Decision: Hashable, Sendable {
        case write([Write], reason: Reason)
        case keep(reason: Reason)
    }

    public static let currentTimeUUID: UInt16 = 0x2A2B
    public static let localTimeInformationUUID: UInt16 = 0x2A0F
    public static let dateTimeUUID: UInt16 = 0x2A08

    public static func decide(_ facts: Facts) -> Decision {
        let reason: Reason
        if facts.mode == .never {
            return .keep(reason: .notConfigured)
        } else if let evidence = facts.clockNotSet {
            reason = .clockNotSet(evidence)
        } else {
            switch facts.mode {
            case .always:
                reason = .configuredAlways
            case .whenSkewExceeds(let limit):
                guard let skew = facts.measuredSkew else { return .keep(reason: .withinTolerance) }
                guard EpochArithmetic.magnitude(skew) > limit else { return .keep(reason: .withinTolerance) }
                reason = .skewExceeded(skew)
            case .whenClockNotSet, .never:
                return .keep(reason: .notConfigured)
            }
        }
        switch facts.target {
        case .notWritable:
            return .keep(reason: .notWritable)
        case .currentTime(let alsoLocalTime):
            // CTS v1.1 §3.1: the Adjust Reason of a value the client writes says why the time changed; a gateway
            // setting the clock is a manual update from the device's point of view.
            guard let value = CurrentTime(utc: facts.now, adjustReason: .manualTimeUpdate) else {
                return .keep(reason: .gatewayTimeNotRepresentable)
            }
            var writes = [Write(characteristic: currentTimeUUID, bytes: value.bytes)]
            if alsoLocalTime {
                let utcZone = LocalTimeInformation(timeZoneQuarterHours: 0, dstOffset: .standardTime)
                writes.append(Write(characteristic: localTimeInformationUUID, bytes: utcZone.bytes))
            }
            return .write(writes, reason: reason)
        case .dateTime:
            let dateTime = DeviceDateTime(secondsSinceEpoch: EpochArithmetic.split(facts.now).seconds)
            guard dateTime.isKnown, (1582...9999).contains(dateTime.year) else { return .keep(reason: .gatewayTimeNotRepresentable) }
            var writer = ByteWriter(capacity: DeviceDateTime.byteCount)
            dateTime.encode(into: &writer)
            return .write([Write(characteristic: dateTimeUUID, bytes: writer.bytes)], reason: reason)
        }
    }
}
