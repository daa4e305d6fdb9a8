import ControlContract
import DBus

/// Asks the caller of `Pair` the agent's questions (docs/specs/control-api.md, "Pairing prompts"): methods of
/// `io.tether.PairingPrompt1` at the caller's unique name and the object path it passed. A caller that does not
/// answer within `timeout` (60 s) or leaves the bus cancels the pairing: every method then throws
/// `PromptCanceled`.
public struct PairingPromptClient: Sendable {
    public static let interface = GatewayContract.promptInterface
    public static let rejectedError = GatewayContract.promptRejected

    let connection: DBusConnection
    public let caller: String
    public let path: DBusObjectPath
    let timeout: Duration

    public init(connection: DBusConnection, caller: String, path: DBusObjectPath, timeout: Duration = .seconds(60)) {
        self.connection = connection
        self.caller = caller
        self.path = path
        self.timeout = timeout
    }

    public enum Answer: Hashable, Sendable {
        case confirmed
        case rejected
    }

    /// The passkey the technician read off the device (0…999999).
    public func requestPasskey(address: String) async throws -> UInt32 {
        let reply = try await call("RequestPasskey", [.string(address)])
        guard let passkey = reply.first?.uint32Value, passkey <= 999_999 else {
            throw ControlError.promptCanceled("The pairing prompt answered RequestPasskey with something other than a passkey 0–999999")
        }
        return passkey
    }

    public func requestConfirmation(address: String, passkey: UInt32) async throws -> Answer {
        do {
            _ = try await call("RequestConfirmation", [.string(address), .uint32(passkey)])
            return .confirmed
        } catch let error as DBusError where error.name == Self.rejectedError {
            return .rejected
        }
    }

    public func displayPasskey(address: String, passkey: UInt32, entered: UInt16) async throws {
        _ = try await call("DisplayPasskey", [.string(address), .uint32(passkey), .uint16(entered)])
    }

    /// BlueZ canceled the request; tell the caller (best effort: it may already be gone).
    public func cancel() async {
        _ = try? await connection.call(
            destination: caller, path: path, interface: Self.interface, member: "Cancel", timeout: .seconds(5))
    }

    private func call(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        do {
            return try await connection.call(
                destination: caller, path: path, interface: Self.interface, member: member, arguments: arguments,
                timeout: timeout)
        } catch let error as DBusError {
            switch error.code {
            case .noReply, .timeout, .timedOut:
                throw ControlError.promptCanceled("Nobody answered the pairing prompt within \(timeout); pairing canceled")
            case .serviceUnknown, .nameHasNoOwner, .disconnected, .unknownObject, .unknownMethod, .unknownInterface:
                throw ControlError.promptCanceled("The caller left or does not export \(Self.interface) at \(path.rawValue); pairing canceled")
            default:
                if error.name == Self.rejectedError { throw error }
                throw ControlError.promptCanceled("The pairing prompt failed (\(error.name)); pairing canceled")
            }
        }
    }
}
