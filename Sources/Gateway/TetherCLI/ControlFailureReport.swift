import ArgumentParser
import TetherControlClient
import ControlContract

/// What the CLI says and which exit status it gives for each control-API failure: what went wrong, then what to
/// do. The daemon's own messages are printed as is (control-api.md: "the CLI prints it as is").
struct ControlFailureReport: Equatable {
    let message: String
    let code: ExitCode

    init(_ error: GatewayControlError) {
        switch error {
        case .busUnreachable(let address, let reason):
            message = """
                cannot reach the D-Bus bus at \(address): \(reason).
                Is dbus running? Point tether at tetherd's bus with --bus ADDRESS or TETHER_BUS_ADDRESS.
                """
            code = TetherExitCode.daemonUnreachable
        case .daemonNotRunning:
            message = """
                tetherd is not running on this bus (nobody owns \(GatewayContract.busName)).
                Start it with 'systemctl start tetherd'; 'journalctl -u tetherd' shows why it stopped.
                """
            code = TetherExitCode.daemonUnreachable
        case .daemonNotAnswering(let method):
            message = """
                tetherd did not answer \(method) in time, or left the bus.
                Check 'systemctl status tetherd' and 'journalctl -u tetherd', then try again.
                """
            code = TetherExitCode.daemonUnreachable
        case .accessDenied(let method):
            message = """
                permission denied: \(method) changes the gateway, which only root and the 'tether' group may do.
                Run it with sudo, or join the group: sudo usermod -aG tether $USER (then log in again).
                """
            code = TetherExitCode.accessDenied
        case .unsupported(let method):
            message = """
                this tetherd does not offer \(method): tether and tetherd are different versions.
                Install matching versions (both come in the same package).
                """
            code = TetherExitCode.operationFailed
        case .unexpectedReply(let method, let signature):
            message = """
                tetherd answered \(method) with a reply this tether does not understand (signature '\(signature)').
                Install matching versions of tether and tetherd.
                """
            code = TetherExitCode.operationFailed
        case .daemon(let name, let text):
            message = (text.isEmpty ? "tetherd refused the request (\(name.rawValue))." : text) + (Self.advice[name].map { "\n" + $0 } ?? "")
            switch name {
            case .unknownDevice, .unknownSample: code = TetherExitCode.notFound
            case .invalidArgument: code = TetherExitCode.badInput
            case .notPermitted, .busy, .pairingFailed, .promptCanceled, .storageFailed, .unavailable, .imageRefused, .unknown:
                code = TetherExitCode.operationFailed
            }
        case .other(let name, let text):
            message = "tetherd failed: \(text.isEmpty ? name : text)"
            code = TetherExitCode.operationFailed
        }
    }

    /// What to do next, after the daemon's own words, where the error name alone tells it.
    static let advice: [GatewayErrorName: String] = [
        .pairingFailed: "Check the passkey or the number the device shows, keep it close, and run tether pair again.",
        .promptCanceled: "Run tether pair again and answer within 60 s (or give --passkey / --yes).",
        .busy: "Wait for the other pairing or scan to finish, then try again.",
        .unavailable: "'tether status' shows whether BlueZ and the backend are reachable.",
        .storageFailed: "'tether status' shows the storage state; free disk space or raise [storage] limits.",
    ]

    /// Prints `tether: message` on stderr and gives the exit code to throw.
    func exit() -> ExitCode {
        standardError("tether: " + message)
        return code
    }
}

/// A usage problem found after parsing (for example a setting name the daemon does not know): exit 2.
func usageFailure(_ message: String) -> ExitCode {
    standardError("tether: " + message)
    return TetherExitCode.badInput
}

/// A lookup that found nothing: exit 5.
func notFound(_ message: String) -> ExitCode {
    standardError("tether: " + message)
    return TetherExitCode.notFound
}
