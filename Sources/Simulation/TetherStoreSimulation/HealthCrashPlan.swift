import TetherPrimitives
import TetherStore

/// What the health crash test's gateway child ingests, as a pure function of where each stream's cursor is, so that
/// a restarted child continues where the store says it is and the driver can tell exactly what every row must be.
///
/// Stream `s` is the glucose record stream of peripheral `C4:00:00:00:00:<s>`. Each batch carries the next
/// `recordsPerBatch` records (two samples each, glucose and a second metric) with the cursor moved to the last, plus
/// the previous batch's last record again (a duplicate, as a reconnect would send it). After `recordsPerEpoch`
/// records the meter "resets": the next batch starts epoch + 1 at record 1.
public struct HealthCrashPlan: Sendable {
    public var streams: Int
    public var recordsPerBatch: Int64
    public var recordsPerEpoch: Int64

    public init(streams: Int = 4, recordsPerBatch: Int64 = 8, recordsPerEpoch: Int64 = 48) {
        self.streams = streams
        self.recordsPerBatch = recordsPerBatch
        self.recordsPerEpoch = recordsPerEpoch
    }

    public static let characteristic = "00002a18-0000-1000-8000-00805f9b34fb"
    /// Two metric codes per record (160368 is MDC_CONC_GLU_UNDETERMINED_PLASMA; the store treats codes as opaque).
    public static let metrics = [160_368, 160_369]
    static let start = Timestamp(nanoseconds: 1_793_520_000_000_000_000)

    public static func address(stream: Int) -> String { "C4:00:00:00:00:" + String(stream, radix: 16, uppercase: true).leftPadded(2) }

    public var stream: HealthRecordStream { HealthRecordStream(characteristic: Self.characteristic) }

    /// The batch that follows a stream at `cursor` (epoch, position); `nil` cursor: the stream's first.
    public func nextBatch(peripheralUid: String, stream index: Int, cursor: (epoch: Int64, position: Int64?)?) -> HealthIngestBatch {
        var epoch = cursor?.epoch ?? 0
        var last = cursor?.position ?? 0
        var reason: HealthEpochReason?
        if last >= recordsPerEpoch {
            epoch += 1
            last = 0
            reason = .sequenceReset
        }
        let through = last + recordsPerBatch
        var records = Array((last + 1)...through)
        if last > 0 { records.insert(last, at: 0) }  // sent again: a duplicate
        let samples = records.flatMap { record in Self.metrics.map { Self.sample(stream: index, epoch: epoch, record: record, metric: $0) } }
        return HealthIngestBatch(
            peripheralUid: peripheralUid, samples: samples,
            cursor: HealthCursorMove(stream: stream, epoch: epoch, position: through, epochReason: reason))
    }

    /// The one sample a record and metric must be stored as.
    public static func sample(stream: Int, epoch: Int64, record: Int64, metric: Int) -> HealthSample {
        var mixer = SplitMix64(seed: UInt64(stream) << 48 ^ UInt64(epoch) << 32 ^ UInt64(record) << 8 ^ UInt64(metric & 0xFF))
        let value = Int64(20 + mixer.next() % 500)
        let at = start.advanced(by: .seconds(epoch * 86_400 + record * 60))
        return HealthSample(
            metricCode: metric, value: .number(HealthDecimal(mantissa: value, exponent: -5), unit: "kg/L", canonical: HealthDecimal(mantissa: value, exponent: 0), unit: "mg/dL"),
            effectiveAt: at, deviceTime: "epoch \(epoch) record \(record)", timeBasis: .clockSetByGateway, recordSequence: record, epoch: epoch,
            lane: .cold, characteristic: characteristic, rawBytes: [UInt8(truncatingIfNeeded: record), UInt8(truncatingIfNeeded: value)], parserVersion: 1,
            receivedAt: at)
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
