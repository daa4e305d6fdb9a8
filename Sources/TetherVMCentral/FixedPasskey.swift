import BlueZ
import DBus

/// The technician's answers: the passkey printed on the device, typed when BlueZ asks. Counts the questions.
actor FixedPasskey: AgentDelegate {
    let passkey: UInt32?
    private(set) var requests: [String] = []

    init(passkey: UInt32?) { self.passkey = passkey }

    func requestPasskey(device: DBusObjectPath) async -> UInt32? {
        requests.append("RequestPasskey \(device.rawValue)")
        return passkey
    }

    func requestConfirmation(device: DBusObjectPath, passkey: UInt32) async -> Bool {
        requests.append("RequestConfirmation \(device.rawValue) \(passkey)")
        return false
    }

    func cancel() async { requests.append("Cancel") }

    var questions: [String] { requests }
}
