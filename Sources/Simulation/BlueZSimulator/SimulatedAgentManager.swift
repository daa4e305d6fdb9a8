import DBus

/// `org.bluez.AgentManager1` at `/org/bluez`: clients register `org.bluez.Agent1` objects that pairing calls.
public actor SimulatedAgentManager {
    struct Agent: Hashable, Sendable {
        var owner: String
        var path: DBusObjectPath
        var capability: String
    }

    static let capabilities: Set<String> = [
        "", "DisplayOnly", "DisplayYesNo", "KeyboardOnly", "NoInputNoOutput", "KeyboardDisplay",
    ]

    private var agents: [Agent] = []
    private var defaultAgent: Agent?
    /// The `agent-registration` fault: RegisterAgent answers after this delay, and refuses when `refusal` is set.
    var registrationDelay: Duration = .zero
    var registrationRefusal: DBusError?

    init() {}

    /// The agent `Pair()` asks: the calling client's own (BlueZ device.c pair_device → agent_get(sender); seen in
    /// the real-BlueZ VM, where the central's non-default agent was asked while a peripheral held the default),
    /// else the default agent, else (leniently; BlueZ would pair without one) the most recently registered.
    func pairingAgent(for caller: String) -> Agent? {
        agents.last { $0.owner == caller } ?? defaultAgent ?? agents.last
    }

    func register(owner: String, path: DBusObjectPath, capability: String) throws {
        guard Self.capabilities.contains(capability) else { throw BlueZError.invalidArguments }
        guard !agents.contains(where: { $0.owner == owner && $0.path == path }) else {
            throw BlueZError.alreadyExists
        }
        agents.append(Agent(owner: owner, path: path, capability: capability))
    }

    func unregister(owner: String, path: DBusObjectPath) throws {
        guard let index = agents.firstIndex(where: { $0.owner == owner && $0.path == path }) else {
            throw BlueZError.doesNotExist
        }
        let removed = agents.remove(at: index)
        if defaultAgent == removed { defaultAgent = nil }
    }

    func requestDefault(owner: String, path: DBusObjectPath) throws {
        guard let agent = agents.first(where: { $0.owner == owner && $0.path == path }) else {
            throw BlueZError.doesNotExist
        }
        defaultAgent = agent
    }

    /// An agent's owner left the bus.
    func clientVanished(_ name: String) {
        agents.removeAll { $0.owner == name }
        if defaultAgent?.owner == name { defaultAgent = nil }
    }

    /// Whether `owner` has an agent registered at `path` (tests).
    public func isRegistered(owner: String, path: DBusObjectPath) -> Bool {
        agents.contains { $0.owner == owner && $0.path == path }
    }

    func setRegistrationFault(delay: Duration, refusal: DBusError?) {
        registrationDelay = delay
        registrationRefusal = refusal
    }

    /// bluetoothd restarted: registrations are gone.
    func forgetAll() {
        agents.removeAll()
        defaultAgent = nil
    }

    nonisolated func interface() -> DBusInterface {
        DBusInterface(
            name: BlueZInterface.agentManager,
            methods: [
                DBusMethod("RegisterAgent", inputs: [DBusArgument("agent", "o"), DBusArgument("capability", "s")]) {
                    call in
                    guard let path = call.arguments[0].objectPathValue, let capability = call.arguments[1].stringValue
                    else { throw BlueZError.invalidArguments }
                    let (delay, refusal) = await (self.registrationDelay, self.registrationRefusal)
                    if delay > .zero { try? await Task.sleep(for: delay) }
                    if let refusal { throw refusal }
                    try await self.register(owner: call.sender, path: path, capability: capability)
                    return []
                },
                DBusMethod("UnregisterAgent", inputs: [DBusArgument("agent", "o")]) { call in
                    guard let path = call.arguments[0].objectPathValue else { throw BlueZError.invalidArguments }
                    try await self.unregister(owner: call.sender, path: path)
                    return []
                },
                DBusMethod("RequestDefaultAgent", inputs: [DBusArgument("agent", "o")]) { call in
                    guard let path = call.arguments[0].objectPathValue else { throw BlueZError.invalidArguments }
                    try await self.requestDefault(owner: call.sender, path: path)
                    return []
                },
            ])
    }
}
