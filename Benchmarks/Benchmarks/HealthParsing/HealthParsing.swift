// Parse throughput per health characteristic (issue 14, item 8).
//
// Every iteration decodes 1,000 values of one characteristic through `HealthDecoder.decode(characteristic:bytes:)`,
// the entry point the gateway and `tether health decode` share. With `.kilo` scaling the framework divides by
// 1,000: wall clock is ns/value, throughput values/s, mallocCountTotal mallocs/value. A second benchmark per
// characteristic adds the projection to observations (what the store would insert). The floor is a byte sum over
// the same values: the cost of touching the bytes at all.
//
// The values are the golden vectors of Tests/HealthProfilesTests (the fullest of each characteristic: every field
// present), so the figures are the worst case per value, not a typical minimal notification.

import Benchmark
import HealthProfiles

let valuesPerIteration = BenchmarkScalingFactor.kilo.rawValue

let date: [UInt8] = [0xE8, 0x07, 11, 24, 13, 42, 7]
let workloads: [(String, HealthCharacteristic, [UInt8])] = [
    ("heart rate (uint16, energy, 3 RR)", .heartRateMeasurement, [0x1F, 1, 1, 50, 1, 1, 0, 2, 1, 0xFF, 0xFF]),
    ("blood pressure (every field)", .bloodPressureMeasurement,
     [0x1E, 0x8A, 0x00, 0x58, 0x00, 0x78, 0x00, 0x00, 0x00, 0x04, 0x11, 0x14, 0x29, 0x3B, 0x3C, 0x00, 0x01, 0x27, 0x00]),
    ("intermediate cuff pressure", .intermediateCuffPressure, [0x00, 0xD7, 0xF0, 0xFF, 0x07, 0xFF, 0x07]),
    ("temperature (time, type)", .temperatureMeasurement, [0x06, 0xB0, 0x0E, 0x00, 0xFE, 0xDC, 0x07, 0x0C, 0x05, 0x0B, 0x32, 0x1B, 0x04]),
    ("weight (imperial, every field)", .weightMeasurement, [0x0F, 0x54, 0x3D] + date + [3, 0xF5, 0x00, 0xA8, 0x02]),
    ("body composition (every field)", .bodyCompositionMeasurement,
     [0xFF, 0x0F, 0xC9, 0x00] + date + [2] + (1...9).flatMap { [UInt8($0), 0] }),
    ("PLX spot-check (every field)", .plxSpotCheckMeasurement, [0x0F, 0x61, 0x00, 0x48, 0x00] + date + [0x80, 0x00, 0x20, 0x00, 0x00, 0x23, 0xF0]),
    ("PLX continuous (every field)", .plxContinuousMeasurement,
     [0x1F, 0x61, 0x00, 0x48, 0x00, 0x60, 0x00, 0x49, 0x00, 0x5F, 0x00, 0x4A, 0x00, 0x20, 0x00, 0x00, 0x00, 0x01, 0x23, 0xF0]),
    ("glucose (every field)", .glucoseMeasurement, [0x1B, 1, 0, 0xE3, 0x07, 2, 27, 11, 10, 30, 0xFB, 0xFF, 30, 0, 0x12, 0x05, 0x01]),
    ("glucose context (every field)", .glucoseMeasurementContext,
     [0xFF, 0x00, 0x00, 0xB3, 0x03, 0x64, 0x00, 0x04, 0x12, 0x3C, 0x00, 0x32, 0x04, 0xD2, 0xF4, 0x59, 0xF1]),
    ("CGM (one record, every field, E2E-CRC)", .cgmMeasurement,
     [15, 0xE3, 0xD2, 0xE4, 0x05, 0x00, 0x02, 0x14, 0xFF, 0x02, 0xF0, 0xE5, 0xF3, 0x8E, 0x3F]),
    ("CGM (three minimal records)", .cgmMeasurement,
     [6, 0, 0x0C, 0x10, 5, 0, 6, 0, 0x0C, 0x10, 6, 0, 6, 0, 0x0C, 0x10, 7, 0]),
]

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],  // no ARC metrics: they crash on this toolchain
        warmupIterations: 20,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 10_000
    )

    for (name, characteristic, bytes) in workloads {
        let values = [[UInt8]](repeating: bytes, count: valuesPerIteration)
        Benchmark("decode \(name)") { _ in
            blackHole(decodeAll(values, characteristic))
        }
        Benchmark("decode + observations \(name)") { _ in
            blackHole(decodeAndProject(values, characteristic))
        }
        Benchmark("floor: byte sum \(name)") { _ in
            blackHole(byteSum(values))
        }
    }
}

@inline(never)
func decodeAll(_ values: [[UInt8]], _ characteristic: HealthCharacteristic) -> Int {
    var decoded = 0
    for value in values {
        do {
            blackHole(try HealthDecoder.decode(characteristic: characteristic, bytes: value))
            decoded += 1
        } catch {
            fatalError("the benchmark values are valid: \(error)")
        }
    }
    return decoded
}

@inline(never)
func decodeAndProject(_ values: [[UInt8]], _ characteristic: HealthCharacteristic) -> Int {
    var observations = 0
    for value in values {
        do {
            observations += try HealthDecoder.decode(characteristic: characteristic, bytes: value).observations.count
        } catch {
            fatalError("the benchmark values are valid: \(error)")
        }
    }
    return observations
}

@inline(never)
func byteSum(_ values: [[UInt8]]) -> Int {
    var sum = 0
    for value in values {
        for byte in value { sum &+= Int(byte) }
    }
    return sum
}
