import Testing
@testable import HealthProfiles

/// Decodes, failing the test with the error if the bytes are refused.
func decoded(_ characteristic: HealthCharacteristic, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws -> DecodedHealthValue {
    do {
        return try HealthDecoder.decode(characteristic: characteristic, bytes: bytes)
    } catch {
        Issue.record("\(characteristic) refused \(hex(bytes)): \(error)", sourceLocation: sourceLocation)
        throw error
    }
}

/// The typed error for bytes that must be refused (nil, with a recorded issue, if they decode).
func refusal(_ characteristic: HealthCharacteristic, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> HealthDecodingError? {
    do {
        let value = try HealthDecoder.decode(characteristic: characteristic, bytes: bytes)
        Issue.record("\(characteristic) accepted \(hex(bytes)) as \(value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// Every proper prefix of `bytes` is refused with a typed `truncated` error, except the lengths `validPrefix`
/// allows (where the layout makes a shorter value complete: fewer RR intervals, fewer CGM records).
func expectEveryTruncationRefused(
    _ characteristic: HealthCharacteristic, _ bytes: [UInt8], validPrefix: (Int) -> Bool = { _ in false },
    sourceLocation: SourceLocation = #_sourceLocation
) {
    for length in 0..<bytes.count {
        let prefix = Array(bytes.prefix(length))
        do {
            _ = try HealthDecoder.decode(characteristic: characteristic, bytes: prefix)
            #expect(validPrefix(length), "\(characteristic): the \(length)-byte prefix of \(hex(bytes)) decoded", sourceLocation: sourceLocation)
        } catch {
            #expect(
                error.code == .truncated || error.code == .invalidField,
                "\(characteristic): \(length) bytes: \(error)", sourceLocation: sourceLocation)
            #expect(!validPrefix(length), "\(characteristic): the \(length)-byte prefix was refused: \(error)", sourceLocation: sourceLocation)
        }
    }
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { byte in
        let digits = String(byte, radix: 16, uppercase: true)
        return digits.count == 1 ? "0" + digits : digits
    }.joined(separator: " ")
}

/// `mantissa × 10^exponent` as the exact decimal a test expects.
func dec(_ significand: Int64, _ exponent: Int = 0) -> ExactDecimal { ExactDecimal(significand: significand, exponent: exponent) }

/// Little-endian bytes of a 16-bit value, for building values by hand from a spec layout.
func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

/// A Date Time (GATT Specification Supplement §3.70) laid out by hand: year LE16, month, day, h, m, s.
func dateTimeBytes(_ year: UInt16, _ month: UInt8, _ day: UInt8, _ hours: UInt8, _ minutes: UInt8, _ seconds: UInt8) -> [UInt8] {
    le16(year) + [month, day, hours, minutes, seconds]
}

extension DecodedHealthValue {
    var bloodPressure: BloodPressureMeasurement? {
        switch self {
        case .bloodPressure(let value), .intermediateCuffPressure(let value): value
        default: nil
        }
    }
    var heartRate: HeartRateMeasurement? { if case .heartRate(let value) = self { value } else { nil } }
    var temperature: TemperatureMeasurement? {
        switch self {
        case .temperature(let value), .intermediateTemperature(let value): value
        default: nil
        }
    }
    var weight: WeightMeasurement? { if case .weight(let value) = self { value } else { nil } }
    var bodyComposition: BodyCompositionMeasurement? { if case .bodyComposition(let value) = self { value } else { nil } }
    var plxSpotCheck: PLXSpotCheckMeasurement? { if case .plxSpotCheck(let value) = self { value } else { nil } }
    var plxContinuous: PLXContinuousMeasurement? { if case .plxContinuous(let value) = self { value } else { nil } }
    var glucose: GlucoseMeasurement? { if case .glucose(let value) = self { value } else { nil } }
    var glucoseContext: GlucoseMeasurementContext? { if case .glucoseContext(let value) = self { value } else { nil } }
    var cgm: CGMMeasurement? { if case .cgm(let value) = self { value } else { nil } }
}
