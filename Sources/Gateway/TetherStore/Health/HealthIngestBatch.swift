/// One stream of stored records on a peripheral: a measurement characteristic whose records a Record Access Control
/// Point reports (0x2A18 glucose, 0x2A5E spot-check, 0x2AA7 CGM), per user on a multi-user device.
public struct HealthRecordStream: Hashable, Sendable, CustomStringConvertible {
    /// 128-bit lowercase UUID of the measurement characteristic.
    public var characteristic: String
    public var userIndex: Int?

    public init(characteristic: String, userIndex: Int? = nil) {
        self.characteristic = characteristic
        self.userIndex = userIndex
    }

    public var description: String { "\(characteristic)/\(userIndex.map(String.init) ?? "-")" }
}

/// What a stream's position counts: RACP's filter type (GLS §4.11: sequence number; CGMS §4.12: time offset).
public enum HealthCursorKind: String, Codable, Hashable, Sendable, CaseIterable {
    case sequence
    case timeOffset = "time-offset"
}

/// Why a stream's numbering started over (issue 14: "a sequence reset starts a new epoch instead of skipping
/// records").
public enum HealthEpochReason: String, Codable, Hashable, Sendable, CaseIterable {
    /// Epoch 0: the first time the gateway read the stream.
    case first
    /// The device's count or highest number fell below the cursor (memory cleared, a replaced meter, a wrap).
    case sequenceReset = "sequence-reset"
    /// A CGM started a new session: time offsets count from its new start.
    case sessionRestarted = "session-restarted"
}

/// Where a stream's cursor goes when the batch commits: the highest record received in order, in `epoch`.
public struct HealthCursorMove: Hashable, Sendable {
    public var stream: HealthRecordStream
    public var kind: HealthCursorKind
    public var epoch: Int64
    /// The highest record now stored, `nil` for a new epoch with no record yet.
    public var position: Int64?
    /// Required when `epoch` is new (0 is `.first`); ignored otherwise.
    public var epochReason: HealthEpochReason?

    public init(stream: HealthRecordStream, kind: HealthCursorKind = .sequence, epoch: Int64, position: Int64?, epochReason: HealthEpochReason? = nil) {
        self.stream = stream
        self.kind = kind
        self.epoch = epoch
        self.position = position
        self.epochReason = epochReason
    }
}

/// One lane's delivery from one peripheral: its samples and, for the cold lane, the cursor move they justify.
/// Committed in one transaction: the samples and the cursor, or neither.
public struct HealthIngestBatch: Hashable, Sendable {
    /// The registry uid of the peripheral (`peripheral.uid`).
    public var peripheralUid: String
    public var samples: [HealthSample]
    public var cursor: HealthCursorMove?

    public init(peripheralUid: String, samples: [HealthSample], cursor: HealthCursorMove? = nil) {
        self.peripheralUid = peripheralUid
        self.samples = samples
        self.cursor = cursor
    }
}

/// What committing a batch did, in the batch's order, so that the lane knows what was new.
public struct HealthIngestOutcome: Hashable, Sendable {
    public enum SampleResult: Hashable, Sendable {
        /// A new row, with its uid.
        case stored(uid: String)
        /// The reading was already stored (its dedup key exists): nothing written.
        case duplicate(dedupKey: String)
    }

    public enum CursorResult: Hashable, Sendable {
        /// The stream's first cursor (epoch 0).
        case started
        case advanced(from: Int64?, to: Int64?)
        /// The batch named the position the cursor already had.
        case unchanged
        /// A new epoch began (epoch + 1) with this position.
        case newEpoch(Int64, reason: HealthEpochReason)
    }

    public var samples: [SampleResult] = []
    public var cursor: CursorResult?

    public var storedCount: Int { samples.count { if case .stored = $0 { true } else { false } } }
    public var duplicateCount: Int { samples.count - storedCount }
}
