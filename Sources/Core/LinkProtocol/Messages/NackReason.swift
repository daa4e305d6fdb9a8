/// NACK reason codes (§10).
public enum NackReason: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case badCRC = 1
    case unknownType = 2
    case unsupportedVersion = 3
    case malformed = 4
    case busy = 5
    case storageFull = 6
    case outOfWindow = 7
    case truncated = 8
    case invalidValue = 9

    /// §8.5: what the sender of the rejected frame does next.
    public enum SenderAction: Sendable, Hashable {
        case retransmitNow
        case retransmitAtTimer
        case retransmitAfterStorageBackoff
        case release
    }

    public var senderAction: SenderAction {
        switch self {
        case .badCRC, .truncated: .retransmitNow
        case .busy, .outOfWindow: .retransmitAtTimer
        case .storageFull: .retransmitAfterStorageBackoff
        case .unknownType, .malformed, .invalidValue, .unsupportedVersion: .release
        }
    }

    public var description: String {
        switch self {
        case .badCRC: "badCRC"
        case .unknownType: "unknownType"
        case .unsupportedVersion: "unsupportedVersion"
        case .malformed: "malformed"
        case .busy: "busy"
        case .storageFull: "storageFull"
        case .outOfWindow: "outOfWindow"
        case .truncated: "truncated"
        case .invalidValue: "invalidValue"
        }
    }
}
