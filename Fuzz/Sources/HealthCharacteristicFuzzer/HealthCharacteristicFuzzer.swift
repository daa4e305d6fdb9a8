// libFuzzer target for the health characteristic parsers (issue 14, item 7): HealthDecoder.decode on every
// characteristic, and the projection to observations.
//
// Input layout: byte 0 picks the characteristic, its low 4 bits an index into `characteristics` below (modulo its
// count; the same order as Fuzz/make-seeds.py's HEALTH_KINDS) and bits 4-5 the CGM E2E-CRC mode (absent, present,
// inferred from size; 3 reads as inferred). The rest is the characteristic value.
//
// Traps (real bugs): any crash; a decode that is not deterministic; an error whose offset lies outside the value or
// names no field; a non-number value with a number or a canonical value; an intermediate characteristic giving a
// non-intermediate observation or the reverse; a CGM record that claims a CRC that does not match its bytes.

import FuzzSupport
import HealthProfiles

let characteristics: [HealthCharacteristic] = [
    .heartRateMeasurement, .bloodPressureMeasurement, .intermediateCuffPressure, .temperatureMeasurement,
    .intermediateTemperature, .weightMeasurement, .bodyCompositionMeasurement, .plxSpotCheckMeasurement,
    .plxContinuousMeasurement, .glucoseMeasurement, .glucoseMeasurementContext, .cgmMeasurement,
]
let crcModes: [CGMCRCPresence] = [.absent, .present, .inferredFromSize, .inferredFromSize]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    let selector = input.byte()
    let characteristic = characteristics[Int(selector & 0x0F) % characteristics.count]
    let context = HealthDecoder.Context(cgmCRC: crcModes[Int(selector >> 4) & 0x03])
    let value = Array(input.rest())

    let first: Result<DecodedHealthValue, HealthDecodingError>
    do {
        first = .success(try HealthDecoder.decode(characteristic: characteristic, bytes: value, context: context))
    } catch {
        first = .failure(error)
    }
    let second: Result<DecodedHealthValue, HealthDecodingError>
    do {
        second = .success(try HealthDecoder.decode(characteristic: characteristic, bytes: value[...], context: context))
    } catch {
        second = .failure(error)
    }
    check(first == second, "decoding is not deterministic")

    switch first {
    case .failure(let error):
        check(error.offset >= 0 && error.offset <= value.count, "error offset \(error.offset) outside a \(value.count)-byte value: \(error)")
        check(!error.field.isEmpty, "an error that names no field: \(error)")
    case .success(let decoded):
        for observation in decoded.observations {
            if observation.value.status != .number {
                check(observation.value.decimal == nil && observation.canonicalValue == nil, "a \(observation.value.status) with a number")
            } else {
                check(observation.value.decimal != nil, "a number without a value")
            }
            check(observation.isIntermediate == characteristic.isIntermediate, "intermediate flag wrong for \(characteristic)")
            _ = observation.value.description
            _ = observation.canonicalValue?.value.description
        }
        if case .cgm(let measurement) = decoded {
            check(!measurement.records.isEmpty, "a CGM value with no record")
            var offset = 0
            for record in measurement.records {
                let end = offset + Int(record.size)
                check(end <= value.count, "a record past the end of the value")
                if let crc = record.e2eCRC {
                    check(E2ECRC.compute(value[offset..<(end - 2)]) == crc, "a record kept with a CRC that does not match")
                }
                offset = end
            }
            check(offset == value.count, "CGM records do not cover the value")
        }
    }

    // The bare numbers `tether health decode sfloat|float` reads.
    if value.count >= 4 {
        let raw16 = UInt16(value[0]) | UInt16(value[1]) << 8
        let raw32 = UInt32(raw16) | UInt32(value[2]) << 16 | UInt32(value[3]) << 24
        for number in [MedicalFloat.sfloat(raw16), MedicalFloat.float(raw32)] {
            check((number.decimal == nil) == (number.status != .number), "a special value with a number")
            _ = number.description
        }
    }
    return 0
}
