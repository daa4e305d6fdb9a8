/// Bus names: owning well-known names and watching who owns them (methods of `org.freedesktop.DBus`).
extension DBusConnection {
    /// Owns a well-known name such as `org.bluez`.
    public func requestName(_ name: String, flags: DBusNameFlags = []) async throws -> DBusRequestNameReply {
        try WireNames.requireBusName(name)
        let reply = try await callBus("RequestName", [.string(name), .uint32(flags.rawValue)])
        guard let code = reply.first?.uint32Value, let result = DBusRequestNameReply(rawValue: code) else {
            throw DBusError(.inconsistentMessage, "Unexpected RequestName reply \(reply)")
        }
        return result
    }

    /// Gives up a well-known name (or leaves its queue).
    public func releaseName(_ name: String) async throws -> DBusReleaseNameReply {
        try WireNames.requireBusName(name)
        let reply = try await callBus("ReleaseName", [.string(name)])
        guard let code = reply.first?.uint32Value, let result = DBusReleaseNameReply(rawValue: code) else {
            throw DBusError(.inconsistentMessage, "Unexpected ReleaseName reply \(reply)")
        }
        return result
    }

    /// The unique name owning `name`, or nil if nobody owns it.
    public func nameOwner(of name: String) async throws -> String? {
        try WireNames.requireBusName(name)
        do {
            return try await callBus("GetNameOwner", [.string(name)]).first?.stringValue
        } catch let error as DBusError where error.code == .nameHasNoOwner {
            return nil
        }
    }

    /// Every name currently on the bus (unique and well-known).
    public func listNames() async throws -> [String] {
        try await callBus("ListNames", []).first?.stringsValue ?? []
    }

    /// Ownership changes of `name` (or of every name when nil), from the bus's NameOwnerChanged signal.
    /// Returns once the bus is watching, so a change made afterwards is reported.
    public func nameOwnerChanges(of name: String? = nil) async throws -> AsyncStream<DBusNameOwnerChange> {
        if let name { try WireNames.requireBusName(name) }
        let rule = DBusMatchRule(
            sender: SignalRouter.busName, interface: SignalRouter.busInterface, member: "NameOwnerChanged",
            path: SignalRouter.busPath, arguments: name.map { [0: $0] } ?? [:])
        let signals = try await self.signals(matching: rule)
        return AsyncStream { continuation in
            let forwarding = Task {
                for await signal in signals {
                    if let change = DBusNameOwnerChange(signal) {
                        continuation.yield(change)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in forwarding.cancel() }
        }
    }

    private func callBus(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await call(
            destination: SignalRouter.busName, path: SignalRouter.busPath, interface: SignalRouter.busInterface,
            member: member, arguments: arguments)
    }
}

/// RequestName flags (spec: org.freedesktop.DBus.RequestName).
public struct DBusNameFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// Another connection asking with `.replaceExisting` may take the name from us.
    public static let allowReplacement = DBusNameFlags(rawValue: 0x1)
    /// Take the name from its owner if the owner allowed replacement.
    public static let replaceExisting = DBusNameFlags(rawValue: 0x2)
    /// Fail instead of waiting in the queue when the name is taken.
    public static let doNotQueue = DBusNameFlags(rawValue: 0x4)
}

public enum DBusRequestNameReply: UInt32, Sendable {
    case primaryOwner = 1
    case inQueue = 2
    case exists = 3
    case alreadyOwner = 4
}

public enum DBusReleaseNameReply: UInt32, Sendable {
    case released = 1
    case nonExistent = 2
    case notOwner = 3
}

/// One NameOwnerChanged: nil owners mean "nobody" (the bus sends an empty string).
public struct DBusNameOwnerChange: Hashable, Sendable {
    public let name: String
    public let oldOwner: String?
    public let newOwner: String?

    public init(name: String, oldOwner: String?, newOwner: String?) {
        self.name = name
        self.oldOwner = oldOwner
        self.newOwner = newOwner
    }

    init?(_ signal: DBusSignal) {
        guard signal.arguments.count == 3, let name = signal.arguments[0].stringValue,
            let oldOwner = signal.arguments[1].stringValue, let newOwner = signal.arguments[2].stringValue
        else { return nil }
        self.init(name: name, oldOwner: oldOwner.isEmpty ? nil : oldOwner, newOwner: newOwner.isEmpty ? nil : newOwner)
    }
}
