import Testing
@testable import HealthProfiles

/// `RecordDeletionRule` (issue 14, item 2): how far the gateway may delete a device's records, from the store's facts
/// (each stored key of the epoch, acknowledged or not) and the cursor. Only acknowledged records, never past the
/// cursor, never in another or a fenced epoch, never twice.
@Suite struct RecordDeletionRuleTests {
    static func facts(
        epoch: UInt32 = 0, acknowledged: [UInt16], notAcknowledged: [UInt16] = [], deletedThrough: UInt16? = nil
    ) -> RecordAcknowledgements {
        var keys: [UInt16: Bool] = [:]
        for key in acknowledged { keys[key] = true }
        for key in notAcknowledged { keys[key] = false }
        return RecordAcknowledgements(epoch: epoch, keys: keys, deletedThrough: deletedThrough)
    }

    static func permit(_ through: UInt16, epoch: UInt32 = 0) -> RecordDeletionRule.Decision {
        .permit(RecordDeletionPermit(epoch: epoch, acknowledgedThrough: through))
    }

    /// Rule 3: the permit ends before the first key the backend has not acknowledged, even when later keys are.
    @Test func thePermitEndsAtTheLastAcknowledgedKeyBeforeTheFirstThatIsNot() {
        let facts = Self.facts(acknowledged: [1, 2, 3, 4, 5, 7, 8], notAcknowledged: [6])
        #expect(RecordDeletionRule.decide(facts, cursor: RecordCursor(epoch: 0, last: 8)) == Self.permit(5))
    }

    /// Rule 3: everything acknowledged: up to the cursor.
    @Test func everythingAcknowledgedGoesUpToTheCursor() {
        let facts = Self.facts(acknowledged: Array(1...12))
        #expect(RecordDeletionRule.decide(facts, cursor: RecordCursor(epoch: 0, last: 12)) == Self.permit(12))
    }

    /// Rule 2: never beyond the committed cursor, whatever the store holds above it.
    @Test func neverBeyondTheCommittedCursor() {
        let facts = Self.facts(acknowledged: Array(1...10))
        #expect(RecordDeletionRule.decide(facts, cursor: RecordCursor(epoch: 0, last: 6)) == Self.permit(6))
    }

    /// Rule 3: a key the cursor passed without a record (the device did not have it) neither stops the walk nor
    /// is named by the permit.
    @Test func aGapTheCursorPassedNeitherStopsNorEndsThePermit() {
        let passed = Self.facts(acknowledged: [1, 2, 4, 5])
        #expect(RecordDeletionRule.decide(passed, cursor: RecordCursor(epoch: 0, last: 5)) == Self.permit(5))
        let endsBeforeGap = Self.facts(acknowledged: [1, 2], notAcknowledged: [4])
        #expect(RecordDeletionRule.decide(endsBeforeGap, cursor: RecordCursor(epoch: 0, last: 4)) == Self.permit(2))
    }

    /// Rule 4: nothing acknowledged (the lowest key pending, or nothing stored at all): no permit.
    @Test func nothingAcknowledgedGrantsNothing() {
        let pending = Self.facts(acknowledged: [2, 3], notAcknowledged: [1])
        #expect(RecordDeletionRule.decide(pending, cursor: RecordCursor(epoch: 0, last: 3))
            == .declined(.nothingAcknowledged(firstUnacknowledged: 1)))
        let empty = Self.facts(acknowledged: [])
        #expect(RecordDeletionRule.decide(empty, cursor: RecordCursor(epoch: 0, last: 3))
            == .declined(.nothingAcknowledged(firstUnacknowledged: nil)))
    }

    /// Rule 1: only the cursor's epoch, with something committed, and not fenced.
    @Test func anotherEpochAFencedEpochOrNoCursorGrantNothing() {
        let facts = Self.facts(acknowledged: [1, 2, 3])
        #expect(RecordDeletionRule.decide(facts, cursor: RecordCursor(epoch: 1, last: 3))
            == .declined(.factsOfAnotherEpoch(facts: 0, cursor: 1)))
        let fenced = Self.facts(epoch: 1, acknowledged: [1, 2, 3])
        #expect(RecordDeletionRule.decide(fenced, cursor: RecordCursor(epoch: 1, last: 3, fence: 40)) == .declined(.fencedEpoch))
        #expect(RecordDeletionRule.decide(fenced, cursor: RecordCursor(epoch: 1, last: 3)) == Self.permit(3, epoch: 1))
        #expect(RecordDeletionRule.decide(facts, cursor: .start) == .declined(.nothingCommitted))
    }

    /// Rule 4: a permit at or below what was already deleted in the epoch is none; one above it is granted.
    @Test func whatWasDeletedIsNotDeletedAgain() {
        let same = Self.facts(acknowledged: [1, 2, 3, 4, 5], deletedThrough: 5)
        #expect(RecordDeletionRule.decide(same, cursor: RecordCursor(epoch: 0, last: 5)) == .declined(.alreadyDeleted(through: 5)))
        let more = Self.facts(acknowledged: [1, 2, 3, 4, 5, 6, 7], deletedThrough: 5)
        #expect(RecordDeletionRule.decide(more, cursor: RecordCursor(epoch: 0, last: 7)) == Self.permit(7))
    }
}
