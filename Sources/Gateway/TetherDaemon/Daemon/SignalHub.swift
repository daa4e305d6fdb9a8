import Synchronization

/// Where the observers find the control API's signal emitter: nil until the control API is on the bus, and
/// again after it left, so events before and after are simply not signalled.
final class SignalHub: Sendable {
    private let signals = Mutex<ControlSignals?>(nil)

    func attach(_ emitter: ControlSignals?) { signals.withLock { $0 = emitter } }
    var current: ControlSignals? { signals.withLock { $0 } }
}
