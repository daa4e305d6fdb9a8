import BlueZ
import DBus
import Synchronization

/// The gateway's `AgentDelegate` during one `Pair` call: every question BlueZ asks the agent goes to the caller's
/// `io.tether.PairingPrompt1` object (docs/specs/control-api.md, "Pairing prompts"). An unanswered or failed prompt
/// rejects the request and is remembered, so `Pair` fails with `PromptCanceled` rather than a BlueZ reason.
final class PairingPromptForwarder: AgentDelegate {
    let prompt: PairingPromptClient
    private let failure = Mutex<(any Error)?>(nil)

    init(prompt: PairingPromptClient) { self.prompt = prompt }

    /// Why the caller did not answer, if that is what ended the pairing.
    var promptFailure: (any Error)? { failure.withLock { $0 } }

    func requestPasskey(device: DBusObjectPath) async -> UInt32? {
        do {
            return try await prompt.requestPasskey(address: Self.address(of: device))
        } catch {
            failure.withLock { $0 = error }
            return nil
        }
    }

    func displayPasskey(device: DBusObjectPath, passkey: UInt32, entered: UInt16) async {
        try? await prompt.displayPasskey(address: Self.address(of: device), passkey: passkey, entered: entered)
    }

    func requestConfirmation(device: DBusObjectPath, passkey: UInt32) async -> Bool {
        do {
            return try await prompt.requestConfirmation(address: Self.address(of: device), passkey: passkey) == .confirmed
        } catch {
            failure.withLock { $0 = error }
            return false
        }
    }

    /// Just-works pairing started by the device: tetherd pairs only on a technician's `Pair`, so it is allowed
    /// only while that call runs (this delegate exists only then).
    func requestAuthorization(device: DBusObjectPath) async -> Bool { true }

    func cancel() async { await prompt.cancel() }

    /// `/org/bluez/hci0/dev_C0_54_45_00_00_01` → `C0:54:45:00:00:01`.
    static func address(of device: DBusObjectPath) -> String {
        let last = device.rawValue.split(separator: "/").last ?? ""
        guard last.hasPrefix("dev_") else { return device.rawValue }
        return last.dropFirst(4).replacingOccurrences(of: "_", with: ":")
    }
}
