import BlueZ
import DBus
import Synchronization

/// The gateway's one Agent1 delegate: BlueZ's questions go to the delegate of the pairing in progress (the
/// daemon forwards them to the CLI). With no pairing in progress every question is rejected, so nothing pairs
/// with this gateway behind the technician's back.
final class PairingAgentRouter: AgentDelegate {
    private let current = Mutex<(any AgentDelegate)?>(nil)

    /// Installs `delegate` for one pairing; false if another pairing holds the agent.
    func begin(_ delegate: any AgentDelegate) -> Bool {
        current.withLock { current in
            guard current == nil else { return false }
            current = delegate
            return true
        }
    }

    func end() {
        current.withLock { $0 = nil }
    }

    private var delegate: (any AgentDelegate)? { current.withLock { $0 } }

    func requestPasskey(device: DBusObjectPath) async -> UInt32? {
        await delegate?.requestPasskey(device: device)
    }

    func displayPasskey(device: DBusObjectPath, passkey: UInt32, entered: UInt16) async {
        await delegate?.displayPasskey(device: device, passkey: passkey, entered: entered)
    }

    func requestConfirmation(device: DBusObjectPath, passkey: UInt32) async -> Bool {
        await delegate?.requestConfirmation(device: device, passkey: passkey) ?? false
    }

    func requestAuthorization(device: DBusObjectPath) async -> Bool {
        await delegate?.requestAuthorization(device: device) ?? false
    }

    func authorizeService(device: DBusObjectPath, uuid: String) async -> Bool {
        await delegate?.authorizeService(device: device, uuid: uuid) ?? false
    }

    func cancel() async {
        await delegate?.cancel()
    }
}

/// The agent's answers while the gateway bonds a device again on its own: no one is there to read a passkey or
/// compare numbers, so every question is refused.
struct NoTechnicianDelegate: AgentDelegate {
    func requestPasskey(device: DBusObjectPath) async -> UInt32? { nil }
    func requestConfirmation(device: DBusObjectPath, passkey: UInt32) async -> Bool { false }
}
