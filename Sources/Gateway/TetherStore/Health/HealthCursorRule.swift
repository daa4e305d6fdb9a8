/// Every rule a stream's cursor keeps, in one place and pure: the stored cursor and a requested move in, a decision
/// or a typed refusal out. `HealthStore` applies the decision; the table's triggers (migration v6) refuse the same
/// moves again should any other code try them.
///
/// 1. A stream's first cursor is epoch 0.
/// 2. Within an epoch the position only moves forward (equal is no move): the RACP client moves it only to the
///    highest record received in order, after the success response, so a lower one is a bug that would make the
///    next backfill skip or repeat records.
/// 3. A new epoch is exactly the latest + 1, with a reason (a sequence reset, a new CGM session); its position
///    starts over. An older epoch is never written again.
/// 4. A stream counts sequence numbers or time offsets, never both.
enum HealthCursorRule {
    struct Stored: Hashable {
        var epoch: Int64
        var kind: HealthCursorKind
        var position: Int64?
    }

    enum Decision: Hashable {
        case start
        case advance(from: Int64?, to: Int64?)
        case unchanged
        case newEpoch(Int64, reason: HealthEpochReason)
    }

    static func decide(stored: Stored?, move: HealthCursorMove) -> Result<Decision, HealthStoreError> {
        let stream = move.stream
        guard let stored else {
            // Rule 1.
            return move.epoch == 0 ? .success(.start) : .failure(.epochSkipped(stream, expected: 0, requested: move.epoch))
        }
        // Rule 4.
        guard move.kind == stored.kind else { return .failure(.cursorKindChanged(stream, stored: stored.kind, requested: move.kind)) }
        if move.epoch < stored.epoch {
            return .failure(.epochMovedBackwards(stream, stored: stored.epoch, requested: move.epoch))
        }
        if move.epoch == stored.epoch {
            // Rule 2.
            switch (stored.position, move.position) {
            case (nil, nil): return .success(.unchanged)
            case (nil, .some): return .success(.advance(from: nil, to: move.position))
            case (.some, nil): return .failure(.cursorMovedBackwards(stream, epoch: stored.epoch, stored: stored.position, requested: nil))
            case (.some(let old), .some(let new)):
                if new < old { return .failure(.cursorMovedBackwards(stream, epoch: stored.epoch, stored: old, requested: new)) }
                return .success(new == old ? .unchanged : .advance(from: old, to: new))
            }
        }
        // Rule 3.
        guard move.epoch == stored.epoch + 1 else { return .failure(.epochSkipped(stream, expected: stored.epoch + 1, requested: move.epoch)) }
        guard let reason = move.epochReason, reason != .first else { return .failure(.epochReasonMissing(stream, epoch: move.epoch)) }
        return .success(.newEpoch(move.epoch, reason: reason))
    }
}
