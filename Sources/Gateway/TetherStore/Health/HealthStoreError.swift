/// Why `HealthStore` refused a batch or a change. A refusal is the lane's or the caller's fault and changes
/// nothing; `.store` is the storage's (disk full, I/O), after which the lane keeps its data and retries.
public enum HealthStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Within one epoch a cursor only moves forward (issue 14, "Cursors only move forward").
    case cursorMovedBackwards(HealthRecordStream, epoch: Int64, stored: Int64?, requested: Int64?)
    /// The batch names an epoch older than the stream's latest.
    case epochMovedBackwards(HealthRecordStream, stored: Int64, requested: Int64)
    /// A new epoch must be the latest + 1 (the first is 0) and say why it began.
    case epochSkipped(HealthRecordStream, expected: Int64, requested: Int64)
    case epochReasonMissing(HealthRecordStream, epoch: Int64)
    /// A stream counts either sequence numbers or time offsets, for ever.
    case cursorKindChanged(HealthRecordStream, stored: HealthCursorKind, requested: HealthCursorKind)
    /// No registry peripheral has this uid.
    case unknownPeripheral(uid: String)
    /// No sample has this uid.
    case unknownSample(uid: String)
    /// The sample was already deleted or corrected; a sample changes once (its replacement may change in turn).
    case sampleAlreadyDeleted(uid: String)
    /// The storage failed; nothing was stored.
    case store(StoreError)

    public var description: String {
        switch self {
        case .cursorMovedBackwards(let stream, let epoch, let stored, let requested):
            "cursor of \(stream) would move backwards in epoch \(epoch): \(stored.map(String.init) ?? "none") → \(requested.map(String.init) ?? "none")"
        case .epochMovedBackwards(let stream, let stored, let requested):
            "cursor of \(stream) is in epoch \(stored); the batch names epoch \(requested)"
        case .epochSkipped(let stream, let expected, let requested):
            "the next epoch of \(stream) is \(expected), not \(requested)"
        case .epochReasonMissing(let stream, let epoch):
            "epoch \(epoch) of \(stream) starts without a reason"
        case .cursorKindChanged(let stream, let stored, let requested):
            "\(stream) counts \(stored.rawValue), not \(requested.rawValue)"
        case .unknownPeripheral(let uid): "no peripheral \(uid)"
        case .unknownSample(let uid): "no health sample \(uid)"
        case .sampleAlreadyDeleted(let uid): "health sample \(uid) was already deleted or corrected"
        case .store(let error): "\(error)"
        }
    }
}
