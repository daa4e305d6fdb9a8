/// Evidence in a measurement that the device's clock is not set, as its profile states it. The time-write policy
/// writes the gateway's time at once on such evidence (`TimeWriteMoment` rule 1), on the connection the value came
/// on, unless configured `never`; the value itself is already timed by its receipt (`DeviceTimeDerivation` rule 1).
extension DecodedHealthValue {
    public var clockNotSetEvidence: TimeWritePolicy.ClockNotSetEvidence? {
        switch self {
        // PLXS v1.0.1 §3.1.1.1 (Spot-check Measurement Flags bit 4): "Device Clock is Not Set".
        case .plxSpotCheck(let value) where value.deviceClockNotSet: return .plxDeviceClockNotSet
        // CGMS v1.0.1 §3.2.1.5, Sensor Status Annunciation, Cal/Temp-Octet bit 0: "Time synchronization between
        // sensor and collector required" (bit 8 of the 24-bit field).
        case .cgm(let value) where value.records.contains(where: { $0.sensorStatusAnnunciation & 0x100 != 0 }): return .deviceStatus
        default: break
        }
        // GSS, Date Time: year, month or day 0 is "not known" (a time stamp from a clock nobody set).
        for observation in observations {
            if case .deviceClock(let dateTime) = observation.time, !dateTime.isKnown { return .dateNotKnown }
        }
        return nil
    }
}
