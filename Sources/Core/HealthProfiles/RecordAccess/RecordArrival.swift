/// What a value that arrived on a records-bearing characteristic is to the cold lane: records the RACP client counts
/// (by their keys), or a companion that belongs to a record by its key and is stored with it.
///
/// - Glucose Measurement (0x2A18, GLS v1.0.1 §3.106): one record, keyed by its Sequence Number.
/// - Glucose Measurement Context (0x2A34, GLS v1.0.1 §3.107): a companion of the measurement with the same Sequence
///   Number (GLS §4.10.1: the context, when there is one, follows its measurement in a report). Not a record of its
///   own: RACP counts and filters measurements.
/// - CGM Measurement (0x2AA7, CGMS v1.0.1 §3.2): one or more records per value, each keyed by its Time Offset (the
///   RACP filter of CGMS §4.12, filter type 0x01).
///
/// PLX Spot-check (0x2A5E) has no key in its record (PLXS v1.0.1 §3.2.1: no sequence number, and the PLX RACP takes
/// only "all records"), so it is not a keyed record here; the hot lane keeps those by their device time.
public enum RecordArrival: Hashable, Sendable {
    case records(keys: [UInt16])
    case companion(of: UInt16)

    /// The arrival a decoded value is, or nil for a value that is no record (a live-only characteristic).
    public init?(_ value: DecodedHealthValue) {
        switch value {
        case .glucose(let measurement): self = .records(keys: [measurement.sequenceNumber])
        case .glucoseContext(let context): self = .companion(of: context.sequenceNumber)
        case .cgm(let measurement): self = .records(keys: measurement.records.map(\.timeOffsetMinutes))
        case .heartRate, .bloodPressure, .intermediateCuffPressure, .temperature, .intermediateTemperature, .weight,
            .bodyComposition, .plxSpotCheck, .plxContinuous:
            return nil
        }
    }

    /// The RACP key kind of the characteristic whose values are the records (nil: not a keyed record stream).
    public static func keyKind(of characteristic: HealthCharacteristic) -> RecordKeyKind? {
        switch characteristic {
        case .glucoseMeasurement: .sequenceNumber
        case .cgmMeasurement: .timeOffset
        default: nil
        }
    }
}

extension HealthService {
    /// The characteristic whose values are this service's RACP records, and those that accompany them by key
    /// (RecordArrival); nil for a service without keyed records.
    public var keyedRecords: (records: HealthCharacteristic, companions: [HealthCharacteristic])? {
        switch self {
        case .glucose: (.glucoseMeasurement, [.glucoseMeasurementContext])
        case .continuousGlucoseMonitoring: (.cgmMeasurement, [])
        case .pulseOximeter, .heartRate, .bloodPressure, .healthThermometer, .weightScale, .bodyComposition: nil
        }
    }
}
