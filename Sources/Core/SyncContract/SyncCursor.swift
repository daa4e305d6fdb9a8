/// A position in a tenant's change feed. On the wire it is an opaque string (`next_cursor`, the `after` query
/// parameter); underneath it is the server's change sequence number, never a clock, so it orders exactly as the
/// server committed the changes. Both sides of this contract may compare cursors: the gateway refuses one that
/// moves backward.
public struct SyncCursor: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Changes with a sequence above this one come after the cursor. 0 is the start of the feed.
    public let sequence: Int64

    public static let start = SyncCursor(sequence: 0)

    public init(sequence: Int64) {
        precondition(sequence >= 0, "a feed position is not negative")
        self.sequence = sequence
    }

    private static let prefix = "c1."

    /// `c1.` and the decimal sequence. Clients must treat it as opaque: the format may change with the prefix.
    public var token: String { Self.prefix + String(sequence) }

    /// `nil` for anything this version did not issue.
    public init?(token: String) {
        guard token.hasPrefix(Self.prefix) else { return nil }
        let digits = token.dropFirst(Self.prefix.count)
        guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            digits.first != "0" || digits.count == 1, let sequence = Int64(digits)
        else { return nil }
        self.sequence = sequence
    }

    public static func < (a: Self, b: Self) -> Bool { a.sequence < b.sequence }

    public var description: String { token }
}
