/// How far the cold lane has taken a device's stored records: the last record key (Sequence Number, or CGM Time
/// Offset) committed with its samples, within an epoch.
///
/// An epoch is one run of record keys that never repeat. A device that starts numbering again below the cursor (its
/// memory cleared, a replaced meter, a new CGM session, or the uint16 key wrapping past 65535) starts a new epoch
/// instead of having its records skipped, so that (epoch, key) stays unique and can be a sample's dedup key. See
/// docs/design/health.md, "RACP client".
public struct RecordCursor: Hashable, Sendable, CustomStringConvertible {
    public var epoch: UInt32
    /// The highest key committed in this epoch, in order; nil before the first.
    public var last: UInt16?
    /// Set when this epoch began because the device's latest key fell below the cursor: the highest key of the
    /// earlier epochs. Until the device's latest key reaches it, records keyed above the device's latest are the
    /// earlier epochs' records, still stored, already committed, and are not taken again.
    public var fence: UInt16?

    public init(epoch: UInt32 = 0, last: UInt16? = nil, fence: UInt16? = nil) {
        self.epoch = epoch
        self.last = last
        self.fence = fence
    }

    /// Nothing taken yet.
    public static let start = RecordCursor()

    public var description: String {
        "epoch \(epoch) last \(last.map(String.init) ?? "none")" + (fence.map { " fence \($0)" } ?? "")
    }

    /// Why a cursor may not move where it was asked to.
    public enum MoveError: Error, Hashable, Sendable {
        /// Issue 14, item 2: cursors only move forward. An earlier epoch, or a lower key in the same epoch.
        case backward(from: RecordCursor, to: RecordCursor)
    }

    /// Whether `next` is at or after this cursor: a later epoch, or the same epoch with the same or a higher key.
    public func allowsMove(to next: RecordCursor) -> Bool {
        if next.epoch != epoch { return next.epoch > epoch }
        switch (last, next.last) {
        case (nil, _): return true
        case (.some, nil): return false
        case (.some(let a), .some(let b)): return b >= a
        }
    }

    /// `next`, or a typed error when it would move this cursor back. The store calls this before it writes a
    /// cursor; the RACP client checks every cursor it commits the same way.
    public func advanced(to next: RecordCursor) throws(MoveError) -> RecordCursor {
        guard allowsMove(to: next) else { throw .backward(from: self, to: next) }
        return next
    }
}
