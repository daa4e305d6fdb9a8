import DBus
import Foundation
import ControlContract

/// What the daemon may ask the person pairing (control-api.md, Pairing prompts), answered by the CLI.
public protocol PairingResponder: Sendable {
    /// The passkey shown by the device (0...999999), or nil to cancel.
    func passkey(for address: String) async -> UInt32?
    /// Whether `passkey` matches the one the device shows.
    func confirm(_ passkey: UInt32, for address: String) async -> Bool
    /// The device wants `passkey` typed on it; `entered` keys so far.
    func display(_ passkey: UInt32, entered: UInt16, for address: String) async
    /// The daemon gave up on the question (timeout or BlueZ canceled).
    func canceled() async
}

/// Exports `io.tether.PairingPrompt1` on the client's connection for the duration of one `Pair` call.
///
/// control-api.md: tetherd "calls methods of io.tether.PairingPrompt1 on the object path prompt at the caller's
/// unique bus name (the sender of Pair)". Calls from anyone other than the daemon's current owner are refused, so
/// another local process cannot feed a passkey into our pairing.
public enum PairingPrompt {
    public static func export(
        on connection: DBusConnection, at path: DBusObjectPath, daemon: String, responder: some PairingResponder
    ) async throws {
        try await connection.objectServer.export([interface(daemon: daemon, responder: responder)], at: path)
    }

    /// The path a CLI process uses: unique per process so two `tether pair` runs never collide.
    public static func path(processIdentifier: Int32) -> DBusObjectPath {
        DBusObjectPath("/io/tether/cli/prompt\(processIdentifier)")
    }

    static func interface(daemon: String, responder: some PairingResponder) -> DBusInterface {
        @Sendable func requireDaemon(_ call: DBusMethodCall) throws {
            guard call.sender == daemon else {
                throw DBusError(.accessDenied, "Only \(GatewayContract.busName) may ask this pairing prompt")
            }
        }
        return DBusInterface(
            name: GatewayContract.promptInterface,
            methods: [
                DBusMethod(
                    "RequestPasskey", inputs: [DBusArgument("address", "s")], outputs: [DBusArgument("passkey", "u")]
                ) { call in
                    try requireDaemon(call)
                    let address = call.arguments[0].stringValue ?? ""
                    guard let passkey = await responder.passkey(for: address) else {
                        throw DBusError(name: GatewayContract.promptRejected, message: "The user canceled")
                    }
                    return [.uint32(passkey)]
                },
                DBusMethod(
                    "RequestConfirmation", inputs: [DBusArgument("address", "s"), DBusArgument("passkey", "u")]
                ) { call in
                    try requireDaemon(call)
                    let address = call.arguments[0].stringValue ?? ""
                    let passkey = call.arguments[1].uint32Value ?? 0
                    guard await responder.confirm(passkey, for: address) else {
                        throw DBusError(name: GatewayContract.promptRejected, message: "The user rejected the passkey")
                    }
                    return []
                },
                DBusMethod(
                    "DisplayPasskey",
                    inputs: [DBusArgument("address", "s"), DBusArgument("passkey", "u"), DBusArgument("entered", "q")]
                ) { call in
                    try requireDaemon(call)
                    await responder.display(
                        call.arguments[1].uint32Value ?? 0, entered: call.arguments[2].uint16Value ?? 0,
                        for: call.arguments[0].stringValue ?? "")
                    return []
                },
                DBusMethod("Cancel") { call in
                    try requireDaemon(call)
                    await responder.canceled()
                    return []
                },
            ])
    }
}
