import DBus

/// What an agent can do for the user, as `AgentManager1.RegisterAgent` announces it.
public enum AgentCapability: String, Hashable, Sendable {
    case displayOnly = "DisplayOnly"
    case displayYesNo = "DisplayYesNo"
    case keyboardOnly = "KeyboardOnly"
    case noInputNoOutput = "NoInputNoOutput"
    case keyboardDisplay = "KeyboardDisplay"
}

/// Answers BlueZ's pairing questions (the CLI prompts the technician). Returning nil or false rejects the
/// request: BlueZ receives `org.bluez.Error.Rejected`. Each call is bounded by BlueZ's own timeout.
public protocol AgentDelegate: Sendable {
    /// The passkey (0...999999) the device shows, or nil to reject.
    func requestPasskey(device: DBusObjectPath) async -> UInt32?
    /// Show `passkey`; `entered` counts the digits typed on the remote keyboard so far.
    func displayPasskey(device: DBusObjectPath, passkey: UInt32, entered: UInt16) async
    /// Numeric comparison: whether `passkey` matches what the device shows.
    func requestConfirmation(device: DBusObjectPath, passkey: UInt32) async -> Bool
    /// Just-works pairing initiated by the device.
    func requestAuthorization(device: DBusObjectPath) async -> Bool
    /// A connection to service `uuid`.
    func authorizeService(device: DBusObjectPath, uuid: String) async -> Bool
    /// BlueZ cancelled the outstanding request (timeout or the device went away).
    func cancel() async
    /// BlueZ unregistered the agent (it will not be called again).
    func release() async
}

extension AgentDelegate {
    public func displayPasskey(device: DBusObjectPath, passkey: UInt32, entered: UInt16) async {}
    public func requestAuthorization(device: DBusObjectPath) async -> Bool { false }
    public func authorizeService(device: DBusObjectPath, uuid: String) async -> Bool { false }
    public func cancel() async {}
    public func release() async {}
}

/// `org.bluez.Agent1` exported at `path` and registered with `AgentManager1` (RegisterAgent, then
/// RequestDefaultAgent). Call `unregister()` when done; BlueZ also forgets it when the connection leaves.
///
/// Every question to the delegate is bounded by `answerTimeout`: no answer in time is answered with
/// `org.bluez.Error.Canceled` (BlueZ then fails the pairing with AuthenticationCanceled).
public struct Agent: Sendable {
    public static let managerPath: DBusObjectPath = "/org/bluez"
    public static let largestPasskey: UInt32 = 999_999

    public let path: DBusObjectPath
    public let capability: AgentCapability
    let session: BlueZSession

    /// Exports the agent and registers it, by default as BlueZ's default agent.
    ///
    /// BlueZ asks the agent of the process that called `Device1.Pair()` for an outgoing pairing, and the default
    /// agent for pairings the remote side starts. A process that only pairs outgoing (a central sharing
    /// bluetoothd with a peripheral, as in the real-BlueZ VM) passes `makeDefault: false`.
    public static func register(
        session: BlueZSession, path: DBusObjectPath = "/io/tether/agent",
        capability: AgentCapability = .keyboardDisplay, answerTimeout: Duration = .seconds(60),
        makeDefault: Bool = true, delegate: any AgentDelegate
    ) async throws -> Agent {
        do {
            try await session.connection.objectServer.export([interface(delegate, timeout: answerTimeout)], at: path)
        } catch {
            throw BlueZError.mapping(error)
        }
        do {
            _ = try await session.call(
                managerPath, BlueZInterfaceName.agentManager, "RegisterAgent",
                [.objectPath(path), .string(capability.rawValue)])
            if makeDefault {
                _ = try await session.call(
                    managerPath, BlueZInterfaceName.agentManager, "RequestDefaultAgent", [.objectPath(path)])
            }
        } catch {
            _ = session.connection.objectServer.unexport(path)
            throw error
        }
        return Agent(path: path, capability: capability, session: session)
    }

    /// `UnregisterAgent` and unexport (the unexport happens even if BlueZ already forgot the agent).
    public func unregister() async throws {
        defer { _ = session.connection.objectServer.unexport(path) }
        _ = try await session.call(
            Self.managerPath, BlueZInterfaceName.agentManager, "UnregisterAgent", [.objectPath(path)])
    }

    static let rejected = BlueZError.reply("Rejected", "Rejected by the user")

    @Sendable static func devicePath(of call: DBusMethodCall) throws -> DBusObjectPath {
        guard let path = call.arguments.first?.objectPathValue else {
            throw BlueZError.reply("InvalidArguments", "Expected a device object path")
        }
        return path
    }

    /// Asks the delegate, bounded by `timeout`.
    @Sendable static func ask<Answer: Sendable>(
        _ timeout: Duration, _ question: @escaping @Sendable () async -> Answer
    ) async throws -> Answer {
        do {
            return try await withBlueZTimeout(timeout) { await question() }
        } catch BlueZError.timeout {
            throw BlueZError.reply("Canceled", "No answer within \(timeout)")
        }
    }

    /// Every method is `.concurrent`: a question waits for a person, and BlueZ's `Cancel` must reach it meanwhile.
    static func interface(_ delegate: any AgentDelegate, timeout: Duration) -> DBusInterface {
        let device1 = DBusArgument("device", "o")
        return DBusInterface(
            name: BlueZInterfaceName.agent,
            methods: [
                DBusMethod("Release", dispatch: .concurrent) { _ in
                    try await ask(timeout) { await delegate.release() }
                    return []
                },
                DBusMethod(
                    "RequestPasskey", inputs: [device1], outputs: [DBusArgument("passkey", "u")], dispatch: .concurrent
                ) { call in
                    let device = try devicePath(of: call)
                    guard let passkey = try await ask(timeout, { await delegate.requestPasskey(device: device) }),
                        passkey <= largestPasskey
                    else { throw rejected }
                    return [.uint32(passkey)]
                },
                DBusMethod(
                    "DisplayPasskey",
                    inputs: [device1, DBusArgument("passkey", "u"), DBusArgument("entered", "q")],
                    dispatch: .concurrent
                ) { call in
                    guard let passkey = call.arguments[1].uint32Value, let entered = call.arguments[2].uint16Value
                    else { throw BlueZError.reply("InvalidArguments", "Expected (o, u, q)") }
                    let device = try devicePath(of: call)
                    try await ask(timeout) {
                        await delegate.displayPasskey(device: device, passkey: passkey, entered: entered)
                    }
                    return []
                },
                DBusMethod(
                    "RequestConfirmation", inputs: [device1, DBusArgument("passkey", "u")], dispatch: .concurrent
                ) { call in
                    guard let passkey = call.arguments[1].uint32Value else {
                        throw BlueZError.reply("InvalidArguments", "Expected (o, u)")
                    }
                    let device = try devicePath(of: call)
                    let confirmed = try await ask(timeout) {
                        await delegate.requestConfirmation(device: device, passkey: passkey)
                    }
                    guard confirmed else { throw rejected }
                    return []
                },
                DBusMethod("RequestAuthorization", inputs: [device1], dispatch: .concurrent) { call in
                    let device = try devicePath(of: call)
                    guard try await ask(timeout, { await delegate.requestAuthorization(device: device) }) else {
                        throw rejected
                    }
                    return []
                },
                DBusMethod(
                    "AuthorizeService", inputs: [device1, DBusArgument("uuid", "s")], dispatch: .concurrent
                ) { call in
                    guard let uuid = call.arguments[1].stringValue else {
                        throw BlueZError.reply("InvalidArguments", "Expected (o, s)")
                    }
                    let device = try devicePath(of: call)
                    guard try await ask(timeout, { await delegate.authorizeService(device: device, uuid: uuid) }) else {
                        throw rejected
                    }
                    return []
                },
                DBusMethod("Cancel", dispatch: .concurrent) { _ in
                    try await ask(timeout) { await delegate.cancel() }
                    return []
                },
            ])
    }
}
