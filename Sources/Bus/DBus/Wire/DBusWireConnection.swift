import Synchronization

/// A connection to a message bus that speaks the D-Bus wire protocol itself, for high-rate signal streams.
///
/// `DBusConnection` (libdbus) is the general connection: exported objects, Unix fds, every feature. For a
/// stream of tens of thousands of small signals a second (BlueZ notifications over StartNotify), libdbus's
/// per-message cost (validating, copying, locking, dispatching through lists) dominates. This connection does
/// only what such a stream needs: method calls (to set the stream up) and signal subscriptions whose filter
/// reads each signal in place, in the receive buffer, on the connection's own thread.
///
/// Not supported here: exporting objects (it answers `org.freedesktop.DBus.Peer` only), Unix fd passing, and
/// match rules on arguments other than arg0. Messages are read in either byte order and written little-endian.
public final class DBusWireConnection: Sendable {
    /// The name the bus assigned to this connection, e.g. `:1.42`.
    public let uniqueName: String

    private let loop: ConnectionLoop<WireConnectionCore>
    private let serials: WireSerials
    private let identifiers = Atomic<UInt64>(1)

    private init(uniqueName: String, loop: ConnectionLoop<WireConnectionCore>, serials: WireSerials) {
        self.uniqueName = uniqueName
        self.loop = loop
        self.serials = serials
    }

    /// Connects (`unix:path=` / `unix:abstract=` addresses), authenticates (EXTERNAL) and says Hello.
    ///
    /// `coalescing`: after a read that delivered signals, how long the connection waits before reading again so
    /// that a burst is handled in batches (see `WireConnectionCore.pauseToCoalesce`); `.zero` reads at once.
    public static func connect(
        to bus: DBusBusAddress, coalescing: Duration = .milliseconds(1)
    ) async throws -> DBusWireConnection {
        let address = try bus.resolved()
        let loop = try ConnectionLoop<WireConnectionCore>()
        let serials = WireSerials()
        let uniqueName = try await withCheckedThrowingContinuation { continuation in
            WireConnectionCore.startThread(
                address: address, loop: loop, serials: serials, coalescing: coalescing, opened: continuation)
        }
        return DBusWireConnection(uniqueName: uniqueName, loop: loop, serials: serials)
    }

    deinit {
        loop.requestStop()
    }

    /// False once the connection was closed or the bus went away.
    public var isConnected: Bool {
        loop.isOpen
    }

    /// Sends what is queued, closes the socket and waits until the connection's thread has exited.
    public func close() async {
        loop.requestStop()
        await loop.waitForExit()
    }

    /// Suspends until the connection is gone, whether closed here or dropped by the bus.
    public func waitUntilDisconnected() async {
        await loop.waitForExit()
    }

    /// Calls a method and returns the reply's arguments; errors as `DBusConnection.call`.
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
        let serial = serials.next()
        let message = try WireMessageEncoder.methodCall(
            serial: serial, destination: destination, path: path, interface: interface, member: member,
            arguments: arguments)
        let token = identifiers.wrappingAdd(1, ordering: .relaxed).oldValue
        return try await loop.call(
            token: token,
            start: { core, completion in
                core.startCall(message, serial: serial, token: token, timeout: timeout, completion: completion)
            },
            cancel: { core, token in core.cancelCall(token: token) })
    }

    /// Subscribes to signals matching `rule`, delivered in batches: `collect` runs on the connection's thread for
    /// each matching signal while it still lies in the receive buffer, appending what it picks out (or nothing) to
    /// the batch; after each read from the socket, the batch (if not empty) becomes one element of the stream.
    /// A burst of signals thus wakes the consumer once, not once per signal.
    ///
    /// A `collect` that throws (a signal that is not what it expects) skips that signal; `.end` ends the stream.
    /// Returns once the bus has installed the rule; ending the stream removes it. The stream finishes when the
    /// connection goes away.
    public func signalBatches<Element: Sendable>(
        matching rule: DBusMatchRule,
        of _: Element.Type = Element.self,
        onTermination: (@Sendable () -> Void)? = nil,
        collect: @escaping @Sendable (DBusWireSignal, inout [Element]) throws -> DBusWireCollectOutcome
    ) async throws -> AsyncStream<[Element]> {
        let match = try WireMatch(rule)
        let id = identifiers.wrappingAdd(1, ordering: .relaxed).oldValue
        let (stream, continuation) = AsyncStream.makeStream(of: [Element].self)
        let loop = self.loop
        continuation.onTermination = { _ in
            loop.submit { core in core?.unsubscribe(id: id) }
            onTermination?()
        }
        let collector = WireBatchCollector(continuation: continuation, collect: collect)
        let subscription = WireConnectionCore.Subscription(id: id, match: match, collector: collector, ruleText: rule.text)
        try await withCheckedThrowingContinuation { (ready: CheckedContinuation<Void, any Error>) in
            loop.submit { core in
                guard let core else {
                    continuation.finish()
                    ready.resume(throwing: DBusError.connectionClosed)
                    return
                }
                core.subscribe(subscription) { ready.resume(with: $0) }
            }
        }
        return stream
    }
}

/// What a `signalBatches` collector says after a signal.
public enum DBusWireCollectOutcome: Sendable {
    case keep
    /// End the subscription (for example BlueZ's `Notifying=false`); what was collected is still delivered.
    case end
}

/// A subscription's pending batch, filled and flushed on the connection's thread only.
protocol WireSignalCollector: AnyObject, Sendable {
    /// Returns false when the subscription is over.
    func collect(_ signal: DBusWireSignal) -> Bool
    /// Yields the pending batch, if any.
    func flush()
    func finish()
}

final class WireBatchCollector<Element: Sendable>: WireSignalCollector, @unchecked Sendable {
    // @unchecked: `pending` is touched only on the connection's loop thread (collect and flush are called there).
    private var pending: [Element] = []
    private let continuation: AsyncStream<[Element]>.Continuation
    private let collectInto: @Sendable (DBusWireSignal, inout [Element]) throws -> DBusWireCollectOutcome

    init(
        continuation: AsyncStream<[Element]>.Continuation,
        collect: @escaping @Sendable (DBusWireSignal, inout [Element]) throws -> DBusWireCollectOutcome
    ) {
        self.continuation = continuation
        collectInto = collect
    }

    func collect(_ signal: DBusWireSignal) -> Bool {
        do {
            return try collectInto(signal, &pending) == .keep
        } catch {
            return true
        }
    }

    func flush() {
        let count = pending.count
        guard count > 0 else { return }
        continuation.yield(pending)
        // The next read is likely as large as this one: one allocation instead of growing step by step.
        pending = []
        pending.reserveCapacity(count)
    }

    func finish() {
        flush()
        continuation.finish()
    }
}
