/// The gateway's view of the device's reliable frames in one connection: which are handled (stored or needing no
/// storage) and so may be acknowledged (§7.3, §8.2, §8.6).
struct ReceiveWindow: Sendable {
    /// Every reliable frame up to and including `through` is handled. 65535 is "the frame before 0" (§7.3).
    private(set) var through = SequenceNumber(UInt16.max)
    /// Bit `i`: frame `through + 1 + i` is handled.
    private(set) var handledAhead: UInt32 = 0
    /// Frames accepted and waiting for their store to complete.
    private(set) var inProgress: Set<SequenceNumber> = []
    /// Frames whose store was refused (§8.10): the device holds them back for a while (§8.5) and sends them again.
    private(set) var refused: Set<SequenceNumber> = []
    /// How many frames have been taken out of `.new` (accepted for storage, or handled at once): it grows while the
    /// device's stream makes progress (§8.7).
    private(set) var accepted: UInt64 = 0
    let size: Int

    init(size: Int) {
        precondition((1...32).contains(size), "§7.1: the window is 1…32 frames, the width of ACK's bitmap")
        self.size = size
    }

    enum Classification: Equatable {
        case new
        case inProgress
        case handled
        /// §8.6: `window` or more frames ahead of the cumulative point.
        case outOfWindow
    }

    func classify(_ sequence: SequenceNumber) -> Classification {
        let distance = through.distance(to: sequence)
        if distance <= 0 { return .handled }
        if distance > size { return .outOfWindow }
        if handledAhead & (1 << UInt32(distance - 1)) != 0 { return .handled }
        return inProgress.contains(sequence) ? .inProgress : .new
    }

    /// Whether the device's window holds frames only the gateway can release: stores in progress, or refused
    /// frames the device has not sent again. While it does, the device may be unable to send anything new (§8.6).
    var waitsOnGateway: Bool { !inProgress.isEmpty || !refused.isEmpty }

    mutating func markInProgress(_ sequence: SequenceNumber) {
        if classify(sequence) == .new { accepted += 1 }
        inProgress.insert(sequence)
        refused.remove(sequence)
    }

    /// The store refused the frame: it is the device's again, to send later.
    mutating func abandon(_ sequence: SequenceNumber) {
        if inProgress.remove(sequence) != nil { refused.insert(sequence) }
    }

    mutating func markHandled(_ sequence: SequenceNumber) {
        if classify(sequence) == .new { accepted += 1 }
        inProgress.remove(sequence)
        refused.remove(sequence)
        let distance = through.distance(to: sequence)
        guard distance > 0, distance <= 32 else { return }
        handledAhead |= 1 << UInt32(distance - 1)
        while handledAhead & 1 != 0 {
            through = through.next
            handledAhead >>= 1
        }
    }

    var ack: Ack { Ack(through: through, selective: handledAhead) }
}
