import HealthProfiles
import Synchronization
import TetherPrimitives
import TetherStore

/// The hot lane behind health sessions (issue 14, "Three lanes"): every value a device notifies or indicates is
/// decoded (`HealthDecoder`, the same decoder as `tether health decode`), its reading's time derived
/// (`DeviceTimeDerivation` from what the session learnt of the device's clock), and its samples committed through the
/// shared group commit. Intermediate values (cuff pressure, intermediate temperature) go to live watchers only and
/// are never stored. A reading that arrives again (a resend after a reconnect, the same record hot and then cold) is
/// one row: the store's dedup key refuses the second and it is counted as a duplicate.
///
/// Bytes a parser refuses are counted and kept as the peripheral's last refusal (with the reason and the bytes in
/// hex); nothing else is stored for them.
public actor HealthHotLane: HealthValueSink {
    /// What the lane has done since it started (metrics, `tether status`, tests).
    public struct Counters: Hashable, Sendable {
        public var valuesReceived = 0
        public var samplesStored = 0
        public var duplicates = 0
        public var intermediates = 0
        public var refused = 0
        public var commitFailures = 0
    }

    /// A value shown live (`tether health watch`): intermediates included.
    public struct LiveObservation: Hashable, Sendable {
        public var address: String
        public var characteristic: HealthCharacteristic
        public var observation: HealthObservation
        public var receivedAt: Timestamp
    }

    private let store: HealthStore
    private let committer: GroupCommitter
    private let peripherals: PeripheralRegistry
    public private(set) var counters = Counters()
    /// The last refusal per address: why, and the bytes.
    public private(set) var refusals: [String: String] = [:]
    /// What each connection read of its device's clock, by address and link: a connection's last values may still be
    /// arriving when the device's next connection has started (HealthSession drains a stream after its link ends),
    /// and each is timed with its own connection's facts.
    private var clocks: [LinkKey: DeviceClockFacts] = [:]
    /// A clock the gateway wrote on a link: the facts from before the write, for values received before it.
    private var clocksBeforeWrite: [LinkKey: (facts: DeviceClockFacts, until: Timestamp)] = [:]

    private struct LinkKey: Hashable {
        var address: String
        var link: UInt64
    }
    private var uids: [String: String] = [:]
    private var watchers: [Int: AsyncStream<LiveObservation>.Continuation] = [:]
    private var nextWatcher = 0

    /// The cold lane beside this one, on the same store and group commit: devices' RACP records go there.
    public nonisolated let coldLane: HealthColdLane
    public nonisolated var records: (any HealthRecordSink)? { coldLane }

    public init(database: GatewayDatabase, committer: GroupCommitter, coldLane: HealthColdLane? = nil) {
        store = HealthStore(database: database)
        self.committer = committer
        peripherals = PeripheralRegistry(database: database)
        self.coldLane = coldLane ?? HealthColdLane(database: database, committer: committer)
    }

    public func linkStarted(address: String, link: UInt64, clock: DeviceClockFacts) async {
        let key = LinkKey(address: address, link: link)
        clocks[key] = clock
        clocksBeforeWrite[key] = nil
    }

    public func clockChanged(address: String, link: UInt64, clock: DeviceClockFacts, at instant: Timestamp) async {
        let key = LinkKey(address: address, link: link)
        clocksBeforeWrite[key] = (clocks[key] ?? DeviceClockFacts(), instant)
        clocks[key] = clock
    }

    /// The facts a value received at `instant` on `link` is timed with: before a write of the clock, those read
    /// before it. A link the lane never heard start has none: its readings are timed by receipt, and say so.
    private func clock(of address: String, link: UInt64, receivedAt instant: Timestamp) -> DeviceClockFacts {
        let key = LinkKey(address: address, link: link)
        if let before = clocksBeforeWrite[key], instant < before.until { return before.facts }
        return clocks[key] ?? DeviceClockFacts()
    }

    /// Called after the link's last value (HealthSession): its facts are no longer needed.
    public func linkEnded(address: String, link: UInt64) async {
        let key = LinkKey(address: address, link: link)
        clocks[key] = nil
        clocksBeforeWrite[key] = nil
    }

    public func received(_ value: HealthCharacteristicValue) async {
        counters.valuesReceived += 1
        guard let characteristic = HealthCharacteristic(rawValue: value.characteristic) else {
            refuse(value, because: "not a characteristic the gateway decodes")
            return
        }
        let decoded: DecodedHealthValue
        do {
            decoded = try HealthDecoder.decode(characteristic: characteristic, bytes: value.bytes)
        } catch {
            refuse(value, because: "\(error)")
            return
        }
        let observations = decoded.observations
        for observation in observations {
            let live = LiveObservation(address: value.address, characteristic: characteristic, observation: observation, receivedAt: value.receivedAt)
            for watcher in watchers.values { watcher.yield(live) }
        }
        if characteristic.isIntermediate || observations.allSatisfy(\.isIntermediate) {
            counters.intermediates += observations.count
            return
        }
        guard let uid = peripheralUid(value.address) else {
            refuse(value, because: "no peripheral registry row for \(value.address)")
            return
        }
        let samples = Self.samples(
            of: observations.filter { !$0.isIntermediate }, from: value, characteristic: characteristic,
            clock: clock(of: value.address, link: value.link, receivedAt: value.receivedAt), lane: .hot)
        guard !samples.isEmpty else { return }
        switch await store.commit(HealthIngestBatch(peripheralUid: uid, samples: samples), via: committer) {
        case .success(let outcome):
            counters.samplesStored += outcome.storedCount
            counters.duplicates += outcome.duplicateCount
        case .failure(let error):
            counters.commitFailures += 1
            refusals[value.address] = "commit failed: \(error)"
        }
    }

    /// Live observations from now on, until the stream is dropped.
    public func watch() -> AsyncStream<LiveObservation> {
        let (stream, continuation) = AsyncStream.makeStream(of: LiveObservation.self, bufferingPolicy: .bufferingNewest(256))
        let id = nextWatcher
        nextWatcher += 1
        watchers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.stopWatching(id) } }
        return stream
    }

    private func stopWatching(_ id: Int) { watchers[id] = nil }

    private func refuse(_ value: HealthCharacteristicValue, because reason: String) {
        counters.refused += 1
        refusals[value.address] = "0x\(Hex.uppercase4(value.characteristic)) \(Hex.encode(value.bytes)): \(reason)"
    }

    private func peripheralUid(_ address: String) -> String? {
        if let uid = uids[address] { return uid }
        let uid = (try? peripherals.peripheral(identityAddress: address))??.uid
        uids[address] = uid
        return uid
    }

    /// The store's samples for one decoded value: each observation with an MDC code, numbered per metric within the
    /// record (a heart-rate value's RR intervals), its time derived from the device's statement and clock.
    static func samples(
        of observations: [HealthObservation], from value: HealthCharacteristicValue, characteristic: HealthCharacteristic,
        clock: DeviceClockFacts, lane: HealthLane
    ) -> [HealthSample] {
        var occurrences: [UInt32: Int] = [:]
        return observations.compactMap { observation in
            guard let code = observation.mdcCode else { return nil }
            let occurrence = occurrences[code, default: 0]
            occurrences[code] = occurrence + 1
            let derived = DeviceTimeDerivation.derive(
                Self.readingTime(observation.time), receivedAt: value.receivedAt, clock: clock)
            return HealthSample(
                metricCode: Int(code), occurrence: occurrence, value: Self.value(observation),
                effectiveAt: derived.utc, deviceTime: Self.deviceTime(observation.time),
                timeBasis: HealthTimeBasis(derived.basis), skewMilliseconds: derived.skew.map { $0.nanoseconds / 1_000_000 },
                userIndex: observation.userIndex.map(Int.init), recordSequence: observation.sequenceNumber.map(Int64.init),
                lane: lane, characteristic: characteristic.uuid, rawBytes: value.bytes, parserVersion: HealthDecoder.parserVersion,
                receivedAt: value.receivedAt)
        }
    }

    static func readingTime(_ time: ObservationTime) -> ReadingTime {
        switch time {
        case .deviceClock(let dateTime): dateTime.isKnown ? .dateTime(dateTime) : .clockNotSet(dateTime)
        case .minutesSinceSessionStart(let minutes): .cgmTimeOffset(minutes: minutes)
        case .notSupplied: .none
        }
    }

    static func deviceTime(_ time: ObservationTime) -> String? {
        switch time {
        case .deviceClock(let dateTime): dateTime.description
        case .minutesSinceSessionStart(let minutes): "session offset \(minutes) min"
        case .notSupplied: nil
        }
    }

    static func value(_ observation: HealthObservation) -> TetherStore.HealthValue {
        TetherStore.HealthValue(
            status: HealthValueStatus(observation.value.status),
            reported: observation.value.decimal.map { HealthDecimal(mantissa: $0.significand, exponent: Int32($0.exponent)) },
            reportedUnit: observation.reportedUnit.ucum,
            canonical: observation.canonicalValue.map { HealthDecimal(mantissa: $0.value.significand, exponent: Int32($0.value.exponent)) },
            canonicalUnit: observation.canonicalUnit.ucum)
    }
}

extension HealthTimeBasis {
    /// The store's name for the basis `DeviceTimeDerivation` decided (the same six cases).
    init(_ basis: TimeBasis) {
        switch basis {
        case .clockSetByGateway: self = .clockSetByGateway
        case .localTimeWithOffset: self = .localTimeWithOffset
        case .coincidentClockReading: self = .coincidentClockReading
        case .cgmSessionStart: self = .cgmSessionStart
        case .deviceTimeUnverified: self = .deviceTimeUnverified
        case .receipt: self = .receipt
        }
    }
}

extension HealthValueStatus {
    /// The store's name for an IEEE 11073 value status (Annex F.8's special values).
    init(_ status: ValueStatus) {
        switch status {
        case .number: self = .number
        case .nan: self = .nan
        case .nres: self = .nres
        case .positiveInfinity: self = .positiveInfinity
        case .negativeInfinity: self = .negativeInfinity
        case .reserved: self = .reserved
        }
    }
}
