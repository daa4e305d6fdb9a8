/// How the object server answers a method call: routing to the standard interfaces or to a handler, with the
/// standard error names for everything that does not resolve.
extension DBusObjectServer {
    /// Called on the loop thread for every method call, in the order the bus delivered them; the work happens in
    /// a task. Ordered calls (the default) of one sender run one after another; `.concurrent` ones at once.
    func dispatch(_ call: DBusMethodCall, replyTo address: ReplyAddress) {
        guard dispatchMode(of: call) == .orderedPerSender else {
            Task {
                let outcome = await self.outcome(of: call)
                self.reply(to: address, with: outcome)
            }
            return
        }
        let mustStart = senderQueues.withLock { $0.enqueue(SenderQueues.Entry(call: call, address: address)) }
        guard mustStart else { return }
        Task {
            // This task owns the sender's turn until its queue is empty.
            var current: SenderQueues.Entry? = SenderQueues.Entry(call: call, address: address)
            while let entry = current {
                let outcome = await self.outcome(of: entry.call)
                self.reply(to: entry.address, with: outcome)
                current = self.senderQueues.withLock { $0.next(of: call.sender) }
            }
        }
    }

    /// How the method a call reaches wants to be dispatched. Standard interfaces and calls that resolve to nothing
    /// are ordered (their answers are immediate).
    private func dispatchMode(of call: DBusMethodCall) -> DBusMethod.Dispatch {
        registry.withLock { registry in
            guard let interfaces = registry.objects[call.path] else { return .orderedPerSender }
            let method: DBusMethod?
            if let name = call.interface {
                method = interfaces.first { $0.name == name }?.method(named: call.member)
            } else {
                method = interfaces.lazy.compactMap { $0.method(named: call.member) }.first
            }
            return method?.dispatch ?? .orderedPerSender
        }
    }

    /// Sends the reply (unless the caller asked for none). A handler that returns values its declaration does
    /// not allow, or fds the transport cannot carry, gets the caller an error reply instead of no reply.
    func reply(to address: ReplyAddress, with outcome: Result<[DBusValue], DBusError>) {
        guard address.wantsReply else { return }
        let message: MessageReference
        do {
            switch outcome {
            case .success(let values):
                do {
                    let success = try MessageReference.methodReturn(
                        toSerial: address.serial, destination: address.destination)
                    try success.append(values)
                    try loop.requireTransportCanCarry(success)
                    message = success
                } catch let error as DBusError {
                    message = try Self.errorReply(to: address, DBusError(.failed, "Cannot send the reply: \(error)"))
                }
            case .failure(let error):
                message = try Self.errorReply(to: address, error)
            }
        } catch {
            // Not even an error reply could be built (out of memory); the caller's timeout will end its wait.
            return
        }
        _ = try? send(message)
    }

    private static func errorReply(to address: ReplyAddress, _ error: DBusError) throws -> MessageReference {
        do {
            return try MessageReference.errorReply(
                toSerial: address.serial, destination: address.destination, error: error)
        } catch {
            // A handler threw a DBusError with a malformed name: keep its message under a valid name.
            let fallback = DBusError(.failed, "\(error)")
            return try MessageReference.errorReply(
                toSerial: address.serial, destination: address.destination, error: fallback)
        }
    }

    /// The result of a call: the handler's values or the standard error explaining why there is none.
    func outcome(of call: DBusMethodCall) async -> Result<[DBusValue], DBusError> {
        let node = registry.withLock { $0.node(at: call.path) }
        do {
            return .success(try await route(call, to: node))
        } catch let error as DBusError {
            return .failure(error)
        } catch {
            return .failure(DBusError(.failed, "\(error)"))
        }
    }

    private func route(_ call: DBusMethodCall, to node: ObjectRegistry.Node) async throws -> [DBusValue] {
        let interfaces = node.interfaces ?? []
        switch call.interface {
        case StandardInterfaceName.introspectable?:
            return try introspect(call, node)
        case StandardInterfaceName.properties?:
            try Self.requireExists(node)
            return try await properties(call, node)
        case StandardInterfaceName.objectManager?:
            try Self.requireExists(node)
            guard node.isManagerRoot else { throw Self.unknownInterface(call) }
            return try await objectManager(call, node)
        case let name?:
            try Self.requireExists(node)
            guard let interface = interfaces.first(where: { $0.name == name }) else {
                throw Self.unknownInterface(call)
            }
            guard let method = interface.method(named: call.member) else { throw Self.unknownMethod(call) }
            return try await invoke(method, call)
        case nil:
            // Without an interface the first method of that name wins, the object's own before the standard ones.
            if let method = interfaces.lazy.compactMap({ $0.method(named: call.member) }).first {
                try Self.requireExists(node)
                return try await invoke(method, call)
            }
            switch call.member {
            case "Introspect":
                return try introspect(call, node)
            case "Get", "GetAll", "Set":
                try Self.requireExists(node)
                return try await properties(call, node)
            case "GetManagedObjects" where node.isManagerRoot:
                return try await objectManager(call, node)
            default:
                try Self.requireExists(node)
                throw Self.unknownMethod(call)
            }
        }
    }

    private func invoke(_ method: DBusMethod, _ call: DBusMethodCall) async throws -> [DBusValue] {
        try Self.requireSignature(call, method.inputSignature)
        let values: [DBusValue]
        do {
            values = try await method.handler(call)
        } catch let error as DBusError {
            throw error
        } catch {
            throw DBusError(.failed, "\(error)")
        }
        let returned = DBusSignature(concatenating: values.map(\.signature))
        guard returned == method.outputSignature else {
            throw DBusError(
                .failed,
                "Method '\(call.member)' is declared to return '\(method.outputSignature.rawValue)' "
                    + "but returned '\(returned.rawValue)'"
            )
        }
        return values
    }

    // MARK: org.freedesktop.DBus.Introspectable

    private func introspect(_ call: DBusMethodCall, _ node: ObjectRegistry.Node) throws -> [DBusValue] {
        guard call.member == "Introspect" else { throw Self.unknownMethod(call) }
        // Paths above exported objects answer Introspect only, so clients can walk down from "/".
        guard node.exists || !node.childNames.isEmpty || node.path == .root else { throw Self.unknownObject(call) }
        try Self.requireSignature(call, .empty)
        return [.string(IntrospectionDocument.xml(for: node))]
    }

    // MARK: org.freedesktop.DBus.Properties

    private func properties(_ call: DBusMethodCall, _ node: ObjectRegistry.Node) async throws -> [DBusValue] {
        switch call.member {
        case "Get":
            try Self.requireSignature(call, "ss")
            let property = try Self.property(call, node, interface: call.arguments[0], name: call.arguments[1])
            return [.variant(try await Self.read(property))]
        case "GetAll":
            try Self.requireSignature(call, "s")
            let interface = try Self.interface(call, node, name: call.arguments[0])
            let entries = await Self.readableProperties(of: interface)
            return [.dictionary(keySignature: "s", valueSignature: "v", entries)]
        case "Set":
            try Self.requireSignature(call, "ssv")
            let property = try Self.property(call, node, interface: call.arguments[0], name: call.arguments[1])
            guard let setter = property.setter else {
                throw DBusError(.propertyReadOnly, "Property '\(property.name)' is not writable")
            }
            guard case .variant(let value) = call.arguments[2], value.signature == property.signature else {
                let offered = call.arguments[2].variantValue?.signature.rawValue ?? "?"
                throw DBusError(
                    .invalidArgs,
                    "Property '\(property.name)' has type '\(property.signature.rawValue)', not '\(offered)'")
            }
            do {
                try await setter(value)
            } catch let error as DBusError {
                throw error
            } catch {
                throw DBusError(.failed, "Setting property '\(property.name)' failed: \(error)")
            }
            return []
        default:
            throw Self.unknownMethod(call)
        }
    }

    /// Spec: an empty interface name in Get/Set means "any interface that has this property".
    private static func property(
        _ call: DBusMethodCall,
        _ node: ObjectRegistry.Node,
        interface interfaceName: DBusValue,
        name propertyName: DBusValue
    ) throws -> DBusProperty {
        guard let propertyName = propertyName.stringValue else { throw invalidArgs(call) }
        let candidates: [DBusInterface]
        if interfaceName.stringValue == "" {
            candidates = node.interfaces ?? []
        } else {
            candidates = [try interface(call, node, name: interfaceName)]
        }
        guard let property = candidates.lazy.compactMap({ $0.property(named: propertyName) }).first else {
            throw DBusError(.unknownProperty, "No such property '\(propertyName)'")
        }
        return property
    }

    private static func interface(_ call: DBusMethodCall, _ node: ObjectRegistry.Node, name: DBusValue) throws
        -> DBusInterface
    {
        guard let name = name.stringValue else { throw invalidArgs(call) }
        guard let interface = node.interfaces?.first(where: { $0.name == name }) else {
            throw DBusError(.unknownInterface, "No such interface '\(name)' at object path '\(node.path.rawValue)'")
        }
        return interface
    }

    // MARK: org.freedesktop.DBus.ObjectManager

    private func objectManager(_ call: DBusMethodCall, _ node: ObjectRegistry.Node) async throws -> [DBusValue] {
        guard call.member == "GetManagedObjects" else { throw Self.unknownMethod(call) }
        try Self.requireSignature(call, .empty)
        let managed = registry.withLock { $0.managedObjects(by: node.path) }
        var objects: [DBusDictionaryEntry] = []
        for object in managed {
            var interfaces: [DBusDictionaryEntry] = []
            for interface in object.interfaces {
                let properties = await Self.readableProperties(of: interface)
                interfaces.append(
                    DBusDictionaryEntry(
                        key: .string(interface.name),
                        value: .dictionary(keySignature: "s", valueSignature: "v", properties)))
            }
            for name in StandardInterfaceName.announcedWithEveryObject {
                interfaces.append(
                    DBusDictionaryEntry(key: .string(name), value: .dictionary(keySignature: "s", valueSignature: "v", [])))
            }
            objects.append(
                DBusDictionaryEntry(
                    key: .objectPath(object.path),
                    value: .dictionary(keySignature: "s", valueSignature: "a{sv}", interfaces)))
        }
        return [.dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", objects)]
    }

    // MARK: Standard errors

    private static func requireExists(_ node: ObjectRegistry.Node) throws {
        guard node.exists else {
            throw DBusError(.unknownObject, "No such object path '\(node.path.rawValue)'")
        }
    }

    private static func requireSignature(_ call: DBusMethodCall, _ expected: DBusSignature) throws {
        // The decoded arguments are checked too, so handlers can index them by the declared signature.
        let decoded = DBusSignature(concatenating: call.arguments.map(\.signature))
        guard call.signature == expected, decoded == expected else { throw invalidArgs(call, expected: expected) }
    }

    private static func invalidArgs(_ call: DBusMethodCall, expected: DBusSignature? = nil) -> DBusError {
        let expectation = expected.map { ", expected '(\($0.rawValue))'" } ?? ""
        return DBusError(
            .invalidArgs,
            "Invalid arguments '(\(call.signature.rawValue))' for method '\(call.member)'\(expectation)")
    }

    private static func unknownObject(_ call: DBusMethodCall) -> DBusError {
        DBusError(.unknownObject, "No such object path '\(call.path.rawValue)'")
    }

    private static func unknownInterface(_ call: DBusMethodCall) -> DBusError {
        DBusError(
            .unknownInterface,
            "No such interface '\(call.interface ?? "")' at object path '\(call.path.rawValue)'")
    }

    private static func unknownMethod(_ call: DBusMethodCall) -> DBusError {
        let interface = call.interface.map { " in interface '\($0)'" } ?? ""
        return DBusError(
            .unknownMethod,
            "No such method '\(call.member)'\(interface) at object path '\(call.path.rawValue)' "
                + "(signature '\(call.signature.rawValue)')")
    }
}
