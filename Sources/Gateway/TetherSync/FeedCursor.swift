import LinkProtocol
import SyncContract
import TetherStore
import TetherPrimitives

/// The change feed's position in the gateway's store. It only moves forward: a cursor behind the stored one
/// is refused, whoever offers it.
public struct FeedCursor: Sendable {
    public let cursors: SyncCursors
    public let name: String

    public init(cursors: SyncCursors, name: String) {
        self.cursors = cursors
        self.name = name
    }

    /// The stored position; `start` before the first pull.
    public func current() throws(StoreError) -> SyncCursor {
        guard let token = try cursors.value(name) else { return .start }
        guard let cursor = SyncCursor(token: token) else { throw StoreError(.corrupt, "sync cursor \(name) holds \(token)") }
        return cursor
    }

    /// Stores `cursor` if it is ahead of the stored one; the same position is a no-op.
    public func advance(to cursor: SyncCursor, at now: Timestamp) throws(StoreError) {
        let stored = try current()
        guard cursor >= stored else {
            throw StoreError(.invalidRequest, "sync cursor \(name) would move backward from \(stored) to \(cursor)")
        }
        guard cursor > stored else { return }
        try cursors.set(name, to: cursor.token, at: now)
    }
}
