// Decode throughput and heap allocations per frame (issue 2, item 8).
//
// Every benchmark iteration runs one pre-built stream of exactly 1,000 frames through the code under test, cut
// into ATT values as a BLE link delivers them. With `.kilo` scaling the framework divides by 1,000, so every
// reported figure is per frame: wall clock is ns/frame, throughput is frames/s, mallocCountTotal is mallocs/frame.
//
// Building the streams and creating the decoder happen before the measured region; the decoder is reused across
// iterations (as a connection reuses it), so the malloc counts show the steady state only.

import Benchmark
import LinkProtocol

/// Frames per benchmark iteration; must equal the scaling factor so that figures read per frame.
let framesPerIteration = BenchmarkScalingFactor.kilo.rawValue

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],  // no ARC metrics: they crash on this toolchain
        warmupIterations: 50,
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 100_000
    )

    let hits = Workload.hitFrames(count: framesPerIteration, valueSize: FrameEncoder.attValueSize(mtu: 23))
    let mix = Workload.realisticMix(count: framesPerIteration, valueSize: FrameEncoder.attValueSize(mtu: 247))

    for (name, workload) in [("20-byte hit frames", hits), ("realistic mix", mix)] {
        var decoder = FrameDecoder()
        Benchmark("decode \(name)") { benchmark in
            let frames = decode(workload.values, with: &decoder)
            precondition(frames == benchmark.scaledIterations.count, "decoded \(frames) frames")
        }

        var baseline = CopyAndCRC()
        Benchmark("copy + CRC only: \(name)") { benchmark in
            let frames = baseline.run(workload)
            precondition(frames == benchmark.scaledIterations.count, "checked \(frames) frames")
        }
    }

    // Not a frame rate: what one hostile or broken peer costs. Every byte is the magic byte, so every position looks
    // like the start of a 93-byte frame that fails its CRC. Figures are per 244-byte ATT value (MTU 247).
    let flood = [UInt8](repeating: FrameHeader.magic, count: FrameEncoder.attValueSize(mtu: 247))
    var floodDecoder = FrameDecoder()
    Benchmark(
        "adversarial: 244-byte values of 0x54 (per value)",
        configuration: .init(scalingFactor: .one, maxDuration: .seconds(3), maxIterations: 10_000)
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(rejectAll(flood, with: &floodDecoder))
        }
    }
}

/// Appends one value and decodes until the decoder needs more bytes, counting the errors.
@inline(never)
func rejectAll(_ value: [UInt8], with decoder: inout FrameDecoder) -> Int {
    decoder.append(value)
    var errors = 0
    while true {
        do {
            guard try decoder.decode() != nil else { return errors }
        } catch {
            errors += 1
        }
    }
}

// MARK: - Code under test

/// What a connection does with incoming ATT values: append each one, decode every complete frame, and decode each
/// frame's payload into its message.
@inline(never)
func decode(_ values: [[UInt8]], with decoder: inout FrameDecoder) -> Int {
    var frames = 0
    for value in values {
        decoder.append(value)
        do {
            while let frame = try decoder.decode() {
                blackHole(try LinkMessage(frame: frame))
                frames += 1
            }
        } catch {
            fatalError("the benchmark stream holds valid frames only: \(error)")
        }
    }
    return frames
}

/// The floor any decoder has to pay: copy each ATT value into a reassembly buffer and check the CRC of each frame,
/// with frame boundaries known in advance instead of parsed. Same buffer discipline as `FrameDecoder` (one reserved
/// array, consumed bytes dropped in place), no header parsing, no message decoding.
struct CopyAndCRC {
    private var buffer: [UInt8] = []
    private var readIndex = 0

    init() { buffer.reserveCapacity(FrameDecoder.bufferLimit * 2) }

    @inline(never)
    mutating func run(_ workload: Workload) -> Int {
        var frames = 0
        for value in workload.values {
            if readIndex == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                readIndex = 0
            } else if readIndex >= buffer.count / 2 {
                buffer.removeSubrange(0..<readIndex)
                readIndex = 0
            }
            buffer.append(contentsOf: value)
            while frames < workload.frameSizes.count, buffer.count - readIndex >= workload.frameSizes[frames] {
                let end = readIndex + workload.frameSizes[frames]
                let valid = buffer.withUnsafeBytes { raw in
                    let crc = CRC16.update(CRC16.initialValue, UnsafeRawBufferPointer(rebasing: raw[readIndex..<(end - 2)]))
                    return UInt8(truncatingIfNeeded: crc) == raw[end - 2] && UInt8(truncatingIfNeeded: crc >> 8) == raw[end - 1]
                }
                precondition(valid, "the benchmark stream holds valid frames only")
                readIndex = end
                frames += 1
            }
        }
        return frames
    }
}

// MARK: - Workloads

/// A stream of frames cut into ATT values, with the size of each frame for the baseline.
struct Workload: Sendable {
    var values: [[UInt8]]
    var frameSizes: [Int]

    init(frames: [[UInt8]], valueSize: Int) {
        values = FrameEncoder.segments(of: frames.flatMap { $0 }, valueSize: valueSize)
        frameSizes = frames.map(\.count)
    }

    /// Version-1 HIT_EVENT frames, 20 bytes each (§4.4), one per ATT value at the minimum MTU.
    static func hitFrames(count: Int, valueSize: Int) -> Workload {
        let frames = (0..<count).map { index in
            LinkMessage.hitEvent(hit(index)).frame(version: ProtocolVersion.v1, sequence: SequenceNumber(UInt16(index)))
        }
        precondition(frames.allSatisfy { $0.count == 20 } && valueSize == 20)
        return Workload(frames: frames, valueSize: valueSize)
    }

    /// What a version-2 device sends at MTU 247 in a busy session: per 100 frames, 84 HIT_EVENT (22 bytes),
    /// 6 TIME_SYNC_RESPONSE (21), 5 BATTERY_STATUS (13), 3 CONFIG_DATA (74, with unknown TLV records) and
    /// 2 DEVICE_INFO (38), interleaved. ATT values carry up to 244 bytes, so frames straddle values.
    static func realisticMix(count: Int, valueSize: Int) -> Workload {
        let version = ProtocolVersion.v2
        // CONFIG_DATA with every known setting and two records of keys this gateway does not know (§7.11), which
        // it must keep: written as raw TLV bytes because only the decoder builds unknown records.
        var config: [UInt8] = [7, 0, 0, 0, 1, 1, 6, 2, 1, 80, 3, 1, 1, 4, 2, 0x2C, 0x01, 5, 2, 200, 0]
        config += [0x40, 24] + (0..<24).map { UInt8($0) }
        config += [0x41, 16] + (100..<116).map { UInt8($0) }
        let info = DeviceInfo(
            hardwareRevision: 3, firmware: FirmwareVersion(major: 2, minor: 4, patch: 1), bootCounter: 41,
            capabilities: [.battery, .haptics, .led, .sleep], versions: 1...2, serial: "TTH-2A-004417-Q")
        let frames = (0..<count).map { index -> [UInt8] in
            let sequence = SequenceNumber(UInt16(truncatingIfNeeded: index))
            let message: LinkMessage
            switch index % 100 {
            case 10, 30, 50, 70, 90: message = .batteryStatus(BatteryStatus(millivolts: 3_900, percent: 71, isCharging: false))
            case 20, 21, 22, 23, 24, 60:
                message = .timeSyncResponse(TimeSyncResponse(
                    requestSequence: SequenceNumber(UInt16(index)), bootCounter: 41,
                    receiveTicks: UInt32(index) * 1_000, transmitTicks: UInt32(index) * 1_000 + 3))
            case 40, 80, 95:
                return FrameEncoder.frame(
                    version: version, type: MessageType.configData.rawValue, sequence: sequence, payload: config)
            case 0, 55: message = .deviceInfo(info)
            default: message = .hitEvent(hit(index))
            }
            return message.frame(version: version, sequence: sequence)
        }
        return Workload(frames: frames, valueSize: valueSize)
    }

    static func hit(_ index: Int) -> HitEvent {
        HitEvent(
            eventSequence: UInt32(index), bootCounter: 41, ticks: 3_600_000 + UInt32(index) * 1_750,
            durationMilliseconds: UInt16(800 + index % 1_500), intensity: UInt8(index % 101))
    }
}
