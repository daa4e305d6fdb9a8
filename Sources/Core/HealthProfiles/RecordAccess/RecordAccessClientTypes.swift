import TetherPrimitives

/// How a `RecordAccessClient` behaves: what keys the service uses, whether it asks for the count first, its time
/// limits and its retry bounds.
public struct RecordAccessConfiguration: Hashable, Sendable {
    /// Sequence numbers (Glucose, Pulse Oximeter) or time offsets (CGM).
    public var keys: RecordKeyKind
    /// Ask "Report Number of Stored Records" before the transfer (optional in every service). For CGM time offsets
    /// keep it on: the count is the only check of a transfer there, since missing records cannot be seen from keys
    /// minutes apart (and even so it checks only the first transfer of a connection).
    public var asksForCountFirst: Bool
    /// How long a request may go without its first record or its response. 30 s is the ATT transaction time-out
    /// (Core v5.4 Vol 3 Part F §3.3.3), after which the link itself would be in trouble.
    public var responseTimeout: Duration
    /// How long a record stream may pause before the client calls it stopped.
    public var recordTimeout: Duration
    /// How long to wait for the answer to Abort before finishing anyway.
    public var abortTimeout: Duration
    /// Retries of one request refused with 0xFE (procedure already in progress), Server Busy or Procedure Not
    /// Completed, before the client gives up for this connection.
    public var retryLimit: Int
    /// Full jitter: a retry waits uniformly in [0, min(cap, base × 2^(attempt−1))].
    public var backoffBase: Duration
    public var backoffCap: Duration
    /// Requests per connection (count, transfers, confirmations, probes): a bound on a device that never settles.
    public var requestLimit: Int
    /// Seeds the jitter; tests pass a fixed seed, the daemon a random one.
    public var seed: UInt64

    public init(
        keys: RecordKeyKind = .sequenceNumber, asksForCountFirst: Bool = true,
        responseTimeout: Duration = .seconds(30), recordTimeout: Duration = .seconds(10), abortTimeout: Duration = .seconds(5),
        retryLimit: Int = 4, backoffBase: Duration = .milliseconds(500), backoffCap: Duration = .seconds(8),
        requestLimit: Int = 12, seed: UInt64 = 0
    ) {
        self.keys = keys
        self.asksForCountFirst = asksForCountFirst
        self.responseTimeout = responseTimeout
        self.recordTimeout = recordTimeout
        self.abortTimeout = abortTimeout
        self.retryLimit = retryLimit
        self.backoffBase = backoffBase
        self.backoffCap = backoffCap
        self.requestLimit = requestLimit
        self.seed = seed
    }
}

/// Records to store and the cursor to store with them, in one transaction (issue 14, item 2: samples and cursor
/// together). `keys` are ascending and were each received once.
public struct RecordCommit: Hashable, Sendable {
    public var keys: [UInt16]
    public var cursor: RecordCursor

    public init(keys: [UInt16], cursor: RecordCursor) {
        self.keys = keys
        self.cursor = cursor
    }
}

/// What the client tells its driver to do, in order.
public enum RecordAccessOrder: Hashable, Sendable {
    /// Write these bytes to the control point (a write with response). Every write starts a new request: records
    /// of the previous request that no `.commit` named are dropped by the driver.
    case write([UInt8])
    /// Store the named records (parsed by the gateway as they arrived) and the cursor, in one transaction.
    case commit(RecordCommit)
    /// Call `timerFired(at:)` at this instant (replacing any earlier one).
    case armTimer(at: Timestamp)
    case cancelTimer
    /// The procedure is over; nothing more will be ordered until the next `start` (or a deletion).
    case finished(RecordAccessOutcome)
    /// Rule 4: the device's latest key is below the cursor. Compare the device's record `key` (in the answer just
    /// received) with the record the gateway stored under `key` in `epoch`, and answer `latestConfirmed(_:at:)`.
    case confirmLatest(key: UInt16, epoch: UInt32)
    /// Something worth a log line or a metric; it changes nothing.
    case noted(RecordAccessNote)
}

/// How a procedure ended. Every outcome leaves the committed cursor where the next connection resumes.
public enum RecordAccessOutcome: Hashable, Sendable {
    /// Every record the device holds after the cursor was taken (or it holds none). `counted` is the device's
    /// answer to Report Number of Stored Records after the cursor, when it was asked.
    case complete(cursor: RecordCursor, counted: UInt32?)
    /// Stopped before the end; the next connection resumes from `cursor`, nothing lost or doubled.
    case interrupted(RecordAccessInterruption, cursor: RecordCursor)
    /// The device refuses what the client needs; retrying the same way on the next connection will not help by
    /// itself (a subscription to fix, an unsupported request).
    case refused(RecordAccessRefusal, cursor: RecordCursor)
    /// The records keyed up to `through` were deleted from the device (issue 14, item 2: by policy only).
    case deleted(through: UInt16, cursor: RecordCursor)
    /// The device holds `count` records keyed within `range` (rule 9, for `VanishedRecordSearch`).
    case counted(ClosedRange<UInt16>, count: UInt32, cursor: RecordCursor)

    public var cursor: RecordCursor {
        switch self {
        case .complete(let cursor, _), .interrupted(_, let cursor), .refused(_, let cursor), .deleted(_, let cursor), .counted(_, _, let cursor): cursor
        }
    }
}

public enum RecordAccessInterruption: Hashable, Sendable {
    case disconnected
    /// No record and no response within `responseTimeout` (the client aborted).
    case responseTimedOut
    /// A record stream paused longer than `recordTimeout` (the client aborted).
    case recordsStopped
    /// 0xFE on every retry.
    case procedureAlreadyInProgress
    /// Server Busy (0x0A) on every retry.
    case serverBusy
    /// Procedure Not Completed (0x08) on every retry.
    case procedureNotCompleted
    /// `requestLimit` requests in this connection.
    case requestLimitReached
    /// The device's latest key fell below the cursor and the store could not say whether its record is the one
    /// stored under that key (rule 4): nothing is decided on this connection.
    case latestUnconfirmed
}

public enum RecordAccessRefusal: Hashable, Sendable {
    /// 0xFD: the control point's indications are not enabled (the driver subscribes, then starts again).
    case indicationsNotEnabled
    /// Any other ATT error on the write (security, permissions, CGMS CRC…).
    case attError(RecordAccessATTError)
    /// The device answered this request with a response code that says it cannot do it.
    case unsupported(RecordAccessOpCode, RecordAccessResponseCode)
    /// A commit would have moved the cursor back (issue 14, item 2). Never expected: the client finishes rather
    /// than order it, and the fuzzer checks it never happens.
    case cursorWouldMoveBack(RecordCursor.MoveError)
}

/// Observations that change nothing but are worth reporting.
public enum RecordAccessNote: Hashable, Sendable {
    case malformedIndication(RecordAccessResponse.DecodingError)
    /// A well-formed response that does not answer the request in flight (late, or for another op code).
    case unexpectedResponse(RecordAccessResponse)
    /// A record while no report was in flight: dropped, taken again by a later request if it is new.
    case recordOutsideProcedure(UInt16)
    case duplicateRecord(UInt16)
    /// A record at or below the cursor in answer to "≥ cursor + 1": the device is probed for a reset.
    case recordAtOrBelowCursor(UInt16)
    /// A record above the device's latest key in a fenced epoch: an earlier epoch's record, already committed.
    case earlierEpochRecord(UInt16)
    /// Keys after `after` were missing before `next`; the cursor stops at the gap and the rest is asked again.
    case gap(after: UInt16?, next: UInt16)
    /// The device's latest key fell below the cursor: a new epoch began.
    case newEpoch(RecordCursor, deviceLatest: UInt16)
    /// The device's latest key fell below the cursor, and its record there is the one stored: its newest records
    /// were deleted on it. No new epoch; the cursor stays.
    case newestRecordsGone(deviceLatest: UInt16)
    /// The device's latest key reached the fence: earlier epochs' records can no longer be on it.
    case fenceLifted(RecordCursor)
    /// "≥" is not supported: the client asks for all records and filters them itself.
    case fallingBackToAllRecords
    /// A CGM transfer delivered fewer records than the device counted; asked once more before committing.
    case shortTransfer(received: Int, counted: UInt32)
    /// A request is retried after this delay.
    case retrying(after: Duration, attempt: Int)
}

/// The guard on deleting device records (issue 14, item 2: only by an explicit policy, and only records the backend
/// has acknowledged). `RecordDeletionRule` grants it from the store's facts; this type is what the client demands.
public struct RecordDeletionPermit: Hashable, Sendable {
    public let epoch: UInt32
    /// The highest key whose record the backend acknowledged.
    public let acknowledgedThrough: UInt16

    public init(epoch: UInt32, acknowledgedThrough: UInt16) {
        self.epoch = epoch
        self.acknowledgedThrough = acknowledgedThrough
    }
}

/// Why `RecordAccessClient.countRecords(in:at:)` (rule 9) would not count.
public enum RecordCountRefusal: Error, Hashable, Sendable {
    case procedureRunning
    case notConnected
    /// CGM time offsets are minutes apart: a missing one cannot be told from one never made.
    case notSequenceNumbered
    /// The device may still hold an earlier epoch's records keyed in the range.
    case fencedEpoch
    case beyondCommittedCursor(range: ClosedRange<UInt16>, cursor: RecordCursor)
}

/// Why a deletion was not started.
public enum RecordDeletionRefusal: Error, Hashable, Sendable {
    case procedureRunning
    case notConnected
    case permitForAnotherEpoch(permit: UInt32, cursor: UInt32)
    /// Only committed records may be deleted: nothing past the cursor, nothing in an epoch with nothing committed.
    case beyondCommittedCursor(through: UInt16, cursor: RecordCursor)
    /// In a fenced epoch the device still holds earlier epochs' records; a key filter cannot tell them apart.
    case fencedEpoch
}
