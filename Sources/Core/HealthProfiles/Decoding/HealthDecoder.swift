/// The one entry point the gateway and `tether health decode` share: bytes of a characteristic in, the decoded value
/// (meaning, not wire form) out, or a typed error that says which field at which offset.
///
/// Rules every parser here follows:
/// - A field is read only when the flags announce it; a value that ends before such a field is `truncated`, naming
///   the field.
/// - Reserved-for-future-use flag and status bits are ignored, not refused: the Core Specification (Vol 1 Part E,
///   "reserved for future use") has the sender set them to zero and the receiver ignore them, so that a device built
///   to a later version of a service still decodes.
/// - Octets after the last field the flags announce are ignored and counted (`trailingBytes`), for the same reason:
///   later versions of the services append fields at the end, announced by flag bits this version reserves (the way
///   Glucose Measurement Context grew Extended Flags). The exceptions are where the layout gives the rest of the
///   value a meaning: Heart Rate's RR-Intervals fill it (an odd octet is refused) and CGM's records are bounded by
///   their Size field.
/// - Special SFLOAT/FLOAT values stay statuses; numbers stay exact decimals.
public enum HealthDecoder {
    /// Bumped whenever a fix changes what some bytes decode to, so that the store can decode old rows again.
    public static let parserVersion = 1

    public struct Context: Hashable, Sendable {
        /// CGM: whether records carry an E2E-CRC (from CGM Feature bit 12), or infer it (offline decoding).
        public var cgmCRC: CGMCRCPresence

        public init(cgmCRC: CGMCRCPresence = .inferredFromSize) {
            self.cgmCRC = cgmCRC
        }
    }

    public static func decode(
        characteristic: HealthCharacteristic, bytes: ArraySlice<UInt8>, context: Context = Context()
    ) throws(HealthDecodingError) -> DecodedHealthValue {
        switch characteristic {
        case .heartRateMeasurement: .heartRate(try HeartRateMeasurement.decode(bytes))
        case .bloodPressureMeasurement: .bloodPressure(try BloodPressureMeasurement.decode(bytes, intermediate: false))
        case .intermediateCuffPressure: .intermediateCuffPressure(try BloodPressureMeasurement.decode(bytes, intermediate: true))
        case .temperatureMeasurement: .temperature(try TemperatureMeasurement.decode(bytes, intermediate: false))
        case .intermediateTemperature: .intermediateTemperature(try TemperatureMeasurement.decode(bytes, intermediate: true))
        case .weightMeasurement: .weight(try WeightMeasurement.decode(bytes))
        case .bodyCompositionMeasurement: .bodyComposition(try BodyCompositionMeasurement.decode(bytes))
        case .plxSpotCheckMeasurement: .plxSpotCheck(try PLXSpotCheckMeasurement.decode(bytes))
        case .plxContinuousMeasurement: .plxContinuous(try PLXContinuousMeasurement.decode(bytes))
        case .glucoseMeasurement: .glucose(try GlucoseMeasurement.decode(bytes))
        case .glucoseMeasurementContext: .glucoseContext(try GlucoseMeasurementContext.decode(bytes))
        case .cgmMeasurement: .cgm(try CGMMeasurement.decode(bytes, crc: context.cgmCRC))
        }
    }

    public static func decode(
        characteristic: HealthCharacteristic, bytes: [UInt8], context: Context = Context()
    ) throws(HealthDecodingError) -> DecodedHealthValue {
        try decode(characteristic: characteristic, bytes: bytes[...], context: context)
    }
}

/// A decoded characteristic value: one case per characteristic, each holding its meaning.
public enum DecodedHealthValue: Hashable, Sendable {
    case heartRate(HeartRateMeasurement)
    case bloodPressure(BloodPressureMeasurement)
    case intermediateCuffPressure(BloodPressureMeasurement)
    case temperature(TemperatureMeasurement)
    case intermediateTemperature(TemperatureMeasurement)
    case weight(WeightMeasurement)
    case bodyComposition(BodyCompositionMeasurement)
    case plxSpotCheck(PLXSpotCheckMeasurement)
    case plxContinuous(PLXContinuousMeasurement)
    case glucose(GlucoseMeasurement)
    case glucoseContext(GlucoseMeasurementContext)
    case cgm(CGMMeasurement)

    /// The samples this value would become in the store (intermediate ones marked, never stored).
    public var observations: [HealthObservation] {
        switch self {
        case .heartRate(let value): value.observations
        case .bloodPressure(let value), .intermediateCuffPressure(let value): value.observations
        case .temperature(let value), .intermediateTemperature(let value): value.observations
        case .weight(let value): value.observations
        case .bodyComposition(let value): value.observations
        case .plxSpotCheck(let value): value.observations
        case .plxContinuous(let value): value.observations
        case .glucose(let value): value.observations
        case .glucoseContext(let value): value.observations
        case .cgm(let value): value.observations
        }
    }

    /// The decoded fields, for `--json` and the fuzz target.
    public var fields: any Encodable & Sendable {
        switch self {
        case .heartRate(let value): value
        case .bloodPressure(let value), .intermediateCuffPressure(let value): value
        case .temperature(let value), .intermediateTemperature(let value): value
        case .weight(let value): value
        case .bodyComposition(let value): value
        case .plxSpotCheck(let value): value
        case .plxContinuous(let value): value
        case .glucose(let value): value
        case .glucoseContext(let value): value
        case .cgm(let value): value
        }
    }
}
