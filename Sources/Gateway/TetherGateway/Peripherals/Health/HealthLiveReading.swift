import HealthProfiles
import TetherPrimitives
import TetherStore

/// One value the hot lane shows live (control API `HealthReading`, `tether health watch`), intermediates included,
/// in the store's plain terms so that the daemon needs no `HealthProfiles` types: the value with its status (a NaN
/// is a status, never a number: IEEE 11073-20601 Annex F.8), reported and canonical units.
public struct HealthLiveReading: Hashable, Sendable {
    public var address: String
    /// The characteristic's 16-bit assigned number (0x2A35 blood pressure, 0x2A36 intermediate cuff pressure).
    public var characteristic: UInt16
    /// `HealthMetric`'s name (`blood_pressure_systolic`, `cuff_pressure`).
    public var metric: String
    /// IEEE 11073-10101 MDC code, when the metric has one.
    public var metricCode: Int?
    public var value: HealthValue
    /// A live-only value (BLS v1.1.1 §3.2 Intermediate Cuff Pressure, HTS v1.0 §3.3 Intermediate Temperature):
    /// shown, never stored.
    public var intermediate: Bool
    /// The device's own time for the reading, in text, when it sent one.
    public var deviceTime: String?
    public var userIndex: Int?
    public var sequenceNumber: Int?
    public var receivedAt: Timestamp

    init(_ live: HealthHotLane.LiveObservation) {
        let observation = live.observation
        address = live.address
        characteristic = live.characteristic.rawValue
        metric = observation.metric.rawValue
        metricCode = observation.mdcCode.map(Int.init)
        value = HealthHotLane.value(observation)
        intermediate = observation.isIntermediate || live.characteristic.isIntermediate
        deviceTime = HealthHotLane.deviceTime(observation.time)
        userIndex = observation.userIndex.map(Int.init)
        sequenceNumber = observation.sequenceNumber.map(Int.init)
        receivedAt = live.receivedAt
    }

    /// `HealthMetric`'s name for a stored sample's MDC code (the store keeps the code only).
    public static func metricName(mdcCode: Int) -> String? {
        UInt32(exactly: mdcCode).flatMap(HealthMetric.named(mdcCode:))?.rawValue
    }

    /// Every MDC code stored samples of the metric with this name carry (`glucose`: each specimen's code and the
    /// general one); nil for a name `HealthMetric` does not know, empty for one that is never stored with a code.
    public static func metricCodes(named name: String) -> [Int]? {
        guard let metric = HealthMetric(rawValue: name) else { return nil }
        var codes = metric.mdcCode.map { [Int($0)] } ?? []
        if metric == .glucose { codes += GlucoseSpecimen.allCodes.map(Int.init) }
        return Array(Set(codes)).sorted()
    }

    /// The names `metricCodes(named:)` knows, for error messages.
    public static var metricNames: [String] { HealthMetric.allCases.filter { $0.mdcCode != nil }.map(\.rawValue) }
}

extension HealthHotLane {
    /// Live readings from now on, in plain terms, until the stream is dropped (`watch()` underneath).
    public func liveReadings() -> AsyncStream<HealthLiveReading> {
        let observations = watch()
        let (stream, continuation) = AsyncStream.makeStream(of: HealthLiveReading.self, bufferingPolicy: .bufferingNewest(256))
        // Detached: the conversion needs nothing of the lane, which keeps its executor for the values.
        let forwarding = Task.detached {
            for await live in observations { continuation.yield(HealthLiveReading(live)) }
            continuation.finish()
        }
        continuation.onTermination = { _ in forwarding.cancel() }
        return stream
    }
}
