import Synchronization

/// A private connection to a message bus, with its own loop thread.
///
/// "Private" means libdbus's `dbus_connection_open_private`: the connection is never shared with other code in
/// the process, and its lifetime is this object's. One dedicated thread reads, writes and dispatches; every
/// method here may be called from any task or thread and hands its work to that thread.
///
/// When the bus goes away, pending calls fail with `.disconnected`, signal streams finish and the process keeps
/// running. Call `close()` when done: exported handlers that capture the connection keep it alive otherwise
/// (dropping the last reference also closes it, without waiting).
public final class DBusConnection: Sendable {
    /// libdbus's default reply timeout.
    public static let defaultCallTimeout: Duration = .seconds(25)

    /// The name the bus assigned to this connection, e.g. `:1.42`.
    public let uniqueName: String
    /// The objects this connection exports.
    public let objectServer: DBusObjectServer

    let loop: ConnectionLoop<ConnectionCore>
    private let identifiers = Atomic<UInt64>(1)

    private init(uniqueName: String, loop: ConnectionLoop<ConnectionCore>, objectServer: DBusObjectServer) {
        self.uniqueName = uniqueName
        self.loop = loop
        self.objectServer = objectServer
    }

    /// Connects to a bus and registers with it (Hello).
    public static func connect(to bus: DBusBusAddress) async throws -> DBusConnection {
        let address = try bus.resolved()
        let loop = try ConnectionLoop<ConnectionCore>()
        let objectServer = DBusObjectServer(loop: loop)
        let uniqueName = try await withCheckedThrowingContinuation { continuation in
            ConnectionCore.startThread(address: address, loop: loop, objectServer: objectServer, opened: continuation)
        }
        return DBusConnection(uniqueName: uniqueName, loop: loop, objectServer: objectServer)
    }

    deinit {
        loop.requestStop()
    }

    /// Whether Unix fds (`h` values) can be sent on this connection (true for Unix-socket buses).
    public var canPassUnixFDs: Bool {
        loop.canPassUnixFDs
    }

    /// False once the connection was closed or the bus went away.
    public var isConnected: Bool {
        loop.isOpen
    }

    /// Sends what is queued, closes the connection and waits until its thread has released everything.
    public func close() async {
        loop.requestStop()
        await loop.waitForExit()
    }

    /// Suspends until the connection is gone, whether closed here or dropped by the bus.
    public func waitUntilDisconnected() async {
        await loop.waitForExit()
    }

    // MARK: Method calls

    /// Calls a method and returns the reply's arguments.
    ///
    /// Throws `DBusError`: the peer's error reply by name, `.noReply` when `timeout` passes first,
    /// `.disconnected` if the connection goes away, `.invalidArgs` for arguments that cannot be marshalled.
    /// Cancelling the task abandons the call with `CancellationError`.
    public func call(
        destination: String?,
        path: DBusObjectPath,
        interface: String?,
        member: String,
        arguments: [DBusValue] = [],
        timeout: Duration = DBusConnection.defaultCallTimeout
    ) async throws -> [DBusValue] {
        guard timeout > .zero else {
            throw DBusError(.invalidArgs, "A call timeout must be positive")
        }
        let message = try MessageReference.methodCall(
            destination: destination, path: path, interface: interface, member: member)
        try message.append(arguments)
        try loop.requireTransportCanCarry(message)

        let token = identifiers.wrappingAdd(1, ordering: .relaxed).oldValue
        return try await loop.call(
            token: token,
            start: { core, completion in core.startCall(message, token: token, timeout: timeout, completion: completion) },
            cancel: { core, token in core.cancelCall(token: token) })
    }

    // MARK: Signals

    /// Emits a signal (broadcast, or unicast when `destination` is set). Signals and replies leave in the order
    /// they were emitted, so a signal emitted by a method handler before it returns precedes the reply.
    public func emitSignal(
        path: DBusObjectPath,
        interface: String,
        member: String,
        arguments: [DBusValue] = [],
        destination: String? = nil
    ) throws {
        let message = try MessageReference.signal(
            path: path, interface: interface, member: member, destination: destination)
        try message.append(arguments)
        try loop.requireTransportCanCarry(message)
        try objectServer.send(message)
    }

    /// Subscribes to signals matching `rule`.
    ///
    /// Returns once the bus has installed the match rule, so any signal emitted after this returns is delivered.
    /// Ending the stream (finishing iteration, cancelling the iterating task, dropping it) removes the rule. The
    /// stream finishes when the connection goes away.
    public func signals(
        matching rule: DBusMatchRule,
        bufferingPolicy: AsyncStream<DBusSignal>.Continuation.BufferingPolicy = .unbounded
    ) async throws -> AsyncStream<DBusSignal> {
        try await signals(matching: rule, bufferingPolicy: bufferingPolicy) { .deliver($0) }
    }

    /// Subscribes to signals matching `rule`, each turned into an element by `filter` on the connection's loop
    /// thread as it arrives: no forwarding task between the bus and the consumer, so a high-rate subscription
    /// (BlueZ notifications over StartNotify) costs one hand-over per signal, not one per stage.
    ///
    /// `filter` must be quick and must not block. `.finish` ends the stream (and removes the rule);
    /// `onTermination` runs once when the stream ends for any reason.
    public func signals<Element: Sendable>(
        matching rule: DBusMatchRule,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded,
        onTermination: (@Sendable () -> Void)? = nil,
        filter: @escaping @Sendable (DBusSignal) -> DBusSignalFilterResult<Element>
    ) async throws -> AsyncStream<Element> {
        try rule.validate()
        let id = identifiers.wrappingAdd(1, ordering: .relaxed).oldValue
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let loop = self.loop
        continuation.onTermination = { _ in
            loop.submit { core in core?.unsubscribe(id: id) }
            onTermination?()
        }
        let sink = SignalSink(
            deliver: { signal in
                switch filter(signal) {
                case .deliver(let element): continuation.yield(element)
                case .skip: break
                case .finish: continuation.finish()
                }
            },
            finish: { continuation.finish() })
        try await withCheckedThrowingContinuation { (ready: CheckedContinuation<Void, any Error>) in
            loop.submit { core in
                guard let core else {
                    continuation.finish()
                    ready.resume(throwing: DBusError.connectionClosed)
                    return
                }
                core.subscribe(id: id, rule: rule, sink: sink) { ready.resume(with: $0) }
            }
        }
        return stream
    }
}

/// What a signal filter makes of one signal (see `DBusConnection.signals(matching:filter:)`).
public enum DBusSignalFilterResult<Element: Sendable>: Sendable {
    case deliver(Element)
    case skip
    /// End the subscription (for example BlueZ's `Notifying=false`).
    case finish
}

/// Where the loop thread hands a subscription's signals.
struct SignalSink: Sendable {
    let deliver: @Sendable (DBusSignal) -> Void
    let finish: @Sendable () -> Void
}
