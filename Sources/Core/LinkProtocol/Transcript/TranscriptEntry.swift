import TetherPrimitives

/// One line of a transcript: what a side received, or a link change, at an instant.
public struct TranscriptEntry: Hashable, Sendable {
    public enum Event: Hashable, Sendable {
        case connected(mtu: Int)
        case disconnected
        /// A notification the gateway received.
        case deviceToGateway([UInt8])
        /// A write the device received.
        case gatewayToDevice([UInt8])
        /// The gateway's store refused every batch for this long from here (§8.10). Part of the recording
        /// because it shaped the gateway's answers, and a replay must refuse the same way.
        case storageFull(Duration)
    }

    public var at: Timestamp
    public var event: Event

    public init(at: Timestamp, event: Event) {
        self.at = at
        self.event = event
    }
}
