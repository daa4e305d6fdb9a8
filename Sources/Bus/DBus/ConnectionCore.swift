internal import CDBus
import Foundation
import Glibc

/// Everything that touches one libdbus connection, confined to the connection's loop thread.
///
/// The loop: run submitted jobs, dispatch every received message through the filter, then poll() the bus
/// socket (libdbus's watches) and the wakeup eventfd until the nearest deadline (a libdbus timeout or a call
/// timing out). Method calls are matched to their replies here by serial, with per-call deadlines, instead of
/// libdbus's DBusPendingCall, so every wait lives in this one poll(). Nothing here blocks on async work:
/// method handlers run as tasks and their replies come back as jobs.
final class ConnectionCore {
    typealias CallCompletion = (Result<[DBusValue], any Error>) -> Void

    private struct PendingCall {
        let token: UInt64
        let deadline: ContinuousClock.Instant
        let timeout: Duration
        let completion: CallCompletion
    }

    private let loop: ConnectionLoop<ConnectionCore>
    private let objectServer: DBusObjectServer
    private let sources = MainLoopSources()
    private var connection: OpaquePointer?
    private var isDisconnected = false
    private var pendingCalls: [UInt32: PendingCall] = [:]
    private var subscriptions: [SignalRouter.SubscriptionID: SignalSink] = [:]
    private var router = SignalRouter()

    private init(loop: ConnectionLoop<ConnectionCore>, objectServer: DBusObjectServer) {
        self.loop = loop
        self.objectServer = objectServer
    }

    /// Starts the loop thread for a new connection; `opened` receives the unique name or the failure.
    static func startThread(
        address: String,
        loop: ConnectionLoop<ConnectionCore>,
        objectServer: DBusObjectServer,
        opened: CheckedContinuation<String, any Error>
    ) {
        NamedThread.start("DBus connection") {
            let core = ConnectionCore(loop: loop, objectServer: objectServer)
            do {
                let uniqueName = try core.open(address: address)
                opened.resume(returning: uniqueName)
                core.run()
            } catch {
                opened.resume(throwing: error)
            }
            core.shutdown()
            for job in loop.close() {
                job(nil)
            }
            loop.finishExit()
        }
    }

    // MARK: Opening and closing

    /// Connects privately (never shared with other code in the process) and says Hello to the bus.
    private func open(address: String) throws -> String {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }

        guard let opened = address.withCString({ dbus_connection_open_private($0, &error) }) else {
            throw Self.translate(error, fallback: "Cannot connect to D-Bus at \(address)")
        }
        connection = opened
        // A bus that goes away must end this connection, not the process.
        dbus_connection_set_exit_on_disconnect(opened, 0)

        guard dbus_bus_register(opened, &error) != 0 else {
            throw Self.translate(error, fallback: "The bus at \(address) did not accept Hello")
        }
        guard let uniqueName = dbus_bus_get_unique_name(opened).map({ String(cString: $0) }) else {
            throw DBusError(.failed, "The bus at \(address) assigned no unique name")
        }
        loop.setCanPassUnixFDs(dbus_connection_can_send_type(opened, CDBUS_TYPE_UNIX_FD) != 0)

        let context = Unmanaged.passUnretained(self).toOpaque()
        let filterAdded = dbus_connection_add_filter(
            opened,
            { _, message, context in
                guard let message, let context else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
                return Unmanaged<ConnectionCore>.fromOpaque(context).takeUnretainedValue().receive(message)
            },
            context,
            nil
        )
        guard filterAdded != 0 else {
            throw DBusError(.noMemory, "libdbus could not add the message filter")
        }
        try sources.install(on: opened)
        return uniqueName
    }

    /// Flushes what is queued, closes the connection and fails everything still waiting on it.
    private func shutdown() {
        if let connection {
            if dbus_connection_get_is_connected(connection) != 0 {
                dbus_connection_flush(connection)
            }
            dbus_connection_close(connection)
            sources.uninstall(from: connection)
            dbus_connection_unref(connection)
            self.connection = nil
        }
        isDisconnected = true

        let calls = pendingCalls.values
        pendingCalls.removeAll()
        for call in calls {
            call.completion(.failure(DBusError.connectionClosed))
        }
        let streams = subscriptions.values
        subscriptions.removeAll()
        router = SignalRouter()
        for stream in streams {
            stream.finish()
        }
    }

    // MARK: The loop

    private func run() {
        while true {
            let work = loop.takeWork()
            for job in work.jobs {
                job(self)
            }
            if work.stop { return }

            dispatchReceived()
            guard let connection, !isDisconnected, dbus_connection_get_is_connected(connection) != 0 else { return }

            let entries = sources.pollEntries()
            var descriptors = [pollfd(fd: loop.wakeupDescriptor, events: Int16(POLLIN), revents: 0)]
            descriptors.append(contentsOf: entries.map(\.descriptor))
            let result = descriptors.withUnsafeMutableBufferPointer { buffer in
                poll(buffer.baseAddress, nfds_t(buffer.count), pollTimeoutMilliseconds())
            }
            if result < 0 {
                // EINTR (a signal) or a transient ENOMEM: nothing was reported, go round again.
                continue
            }
            if descriptors[0].revents != 0 {
                loop.drainWakeup()
            }
            sources.handle(zip(descriptors.dropFirst(), entries).map { ($0.revents, $1.watch) })
            let now = ContinuousClock.now
            sources.fireExpiredTimeouts(now: now)
            expireCalls(now: now)
        }
    }

    /// Runs the filter for every message libdbus has parsed.
    private func dispatchReceived() {
        guard let connection else { return }
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    /// Milliseconds until the nearest deadline, rounded up so poll() does not wake just before it; -1 if none.
    private func pollTimeoutMilliseconds() -> Int32 {
        let deadlines = [sources.nextDeadline, pendingCalls.values.map(\.deadline).min()].compactMap { $0 }
        guard let nearest = deadlines.min() else { return -1 }
        let remaining = ContinuousClock.now.duration(to: nearest)
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        let milliseconds = seconds.multipliedReportingOverflow(by: 1000)
        guard !milliseconds.overflow else { return Int32.max }
        let total = milliseconds.partialValue + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: total)
    }

    private func expireCalls(now: ContinuousClock.Instant) {
        let expired = pendingCalls.filter { $0.value.deadline <= now }
        for (serial, call) in expired {
            pendingCalls[serial] = nil
            call.completion(.failure(DBusError(.noReply, "Did not receive a reply within \(call.timeout)")))
        }
    }

    // MARK: Sending (loop thread only; reached through ConnectionLoop.submit)

    /// Queues a message for sending and returns its serial.
    @discardableResult
    func send(_ message: MessageReference) throws -> UInt32 {
        guard let connection, !isDisconnected else { throw DBusError.connectionClosed }
        // libdbus aborts if asked to send fds over a transport that cannot carry them.
        if message.containsUnixFDs, dbus_connection_can_send_type(connection, CDBUS_TYPE_UNIX_FD) == 0 {
            throw DBusError(.notSupported, "This connection cannot carry Unix file descriptors")
        }
        var serial: UInt32 = 0
        guard dbus_connection_send(connection, message.pointer, &serial) != 0 else {
            throw DBusError(.noMemory, "libdbus could not queue the message")
        }
        return serial
    }

    /// Sends a method call and calls `completion` (on this thread) with the reply, an error or `.noReply`.
    func startCall(_ message: MessageReference, token: UInt64, timeout: Duration, completion: @escaping CallCompletion) {
        do {
            let serial = try send(message)
            pendingCalls[serial] = PendingCall(
                token: token, deadline: .now + timeout, timeout: timeout, completion: completion)
        } catch {
            completion(.failure(error))
        }
    }

    /// Gives up on a call whose task was cancelled; a reply that still arrives is dropped.
    func cancelCall(token: UInt64) {
        guard let (serial, call) = pendingCalls.first(where: { $0.value.token == token }) else { return }
        pendingCalls[serial] = nil
        call.completion(.failure(CancellationError()))
    }

    /// A call to the bus driver itself (AddMatch, GetNameOwner, ...).
    private func callBus(_ member: String, _ arguments: [DBusValue], completion: CallCompletion?) {
        do {
            let message = try MessageReference.methodCall(
                destination: SignalRouter.busName, path: SignalRouter.busPath,
                interface: SignalRouter.busInterface, member: member)
            try message.append(arguments)
            if let completion {
                startCall(message, token: 0, timeout: DBusConnection.defaultCallTimeout, completion: completion)
            } else {
                message.setNoReply()
                try send(message)
            }
        } catch {
            completion?(.failure(error))
        }
    }

    // MARK: Signal subscriptions

    /// Registers a subscription and asks the bus for its signals; `ready` reports the AddMatch outcome.
    func subscribe(
        id: SignalRouter.SubscriptionID,
        rule: DBusMatchRule,
        sink: SignalSink,
        ready: @escaping (Result<Void, any Error>) -> Void
    ) {
        subscriptions[id] = sink
        let commands = router.add(id, rule: rule)
        callBus("AddMatch", [.string(rule.text)]) { [weak self] result in
            switch result {
            case .success:
                ready(.success(()))
            case .failure(let error):
                self?.forgetSubscription(id, sendRemoveMatch: false)
                sink.finish()
                ready(.failure(error))
            }
        }
        perform(commands)
    }

    /// Ends a subscription (its stream was terminated) and withdraws its match rule from the bus.
    func unsubscribe(id: SignalRouter.SubscriptionID) {
        forgetSubscription(id, sendRemoveMatch: true)
    }

    private func forgetSubscription(_ id: SignalRouter.SubscriptionID, sendRemoveMatch: Bool) {
        subscriptions[id] = nil
        let (rule, commands) = router.remove(id)
        if sendRemoveMatch, let rule, !isDisconnected {
            callBus("RemoveMatch", [.string(rule.text)], completion: nil)
        }
        perform(commands)
    }

    private func perform(_ commands: [SignalRouter.Command]) {
        guard !isDisconnected else { return }
        for command in commands {
            switch command {
            case .addMatch(let rule):
                callBus("AddMatch", [.string(rule)], completion: nil)
            case .removeMatch(let rule):
                callBus("RemoveMatch", [.string(rule)], completion: nil)
            case .resolveOwner(let name):
                callBus("GetNameOwner", [.string(name)]) { [weak self] result in
                    guard let self else { return }
                    let owner = (try? result.get())?.first?.stringValue
                    self.deliver(self.router.ownerResolved(name, owner: owner))
                }
            }
        }
    }

    private func deliver(_ deliveries: [SignalRouter.Delivery]) {
        for delivery in deliveries {
            subscriptions[delivery.subscription]?.deliver(delivery.signal)
        }
    }

    // MARK: Receiving

    /// The libdbus filter: every received message passes through here during dispatch.
    private func receive(_ pointer: OpaquePointer) -> DBusHandlerResult {
        guard let message = ReceivedMessage(borrowing: pointer) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
        switch message.kind {
        case .methodReturn, .error:
            completeCall(with: message)
            return DBUS_HANDLER_RESULT_HANDLED
        case .signal:
            receiveSignal(message)
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        case .methodCall:
            receiveMethodCall(message)
            return DBUS_HANDLER_RESULT_HANDLED
        }
    }

    private func completeCall(with message: ReceivedMessage) {
        guard let call = pendingCalls.removeValue(forKey: message.replySerial) else { return }
        if message.kind == .error {
            let name = message.errorName ?? DBusError.Code.failed.name
            call.completion(.failure(DBusError(name: name, message: message.firstStringArgument() ?? "")))
        } else {
            call.completion(Result(catching: { try message.arguments() }))
        }
    }

    private func receiveSignal(_ message: ReceivedMessage) {
        guard let path = message.path, let interface = message.interface, let member = message.member else { return }
        // libdbus queues this local signal when the transport drops (the bus exited or closed on us).
        if interface == "org.freedesktop.DBus.Local", member == "Disconnected" {
            isDisconnected = true
            return
        }
        guard router.wantsSignal(path: path, interface: interface, member: member, destination: message.destination),
            let arguments = try? message.arguments()
        else { return }
        let signal = DBusSignal(
            sender: message.sender ?? "", path: path, interface: interface, member: member,
            destination: message.destination, arguments: arguments)
        deliver(router.route(signal))
    }

    private func receiveMethodCall(_ message: ReceivedMessage) {
        let replyAddress = ReplyAddress(
            serial: message.serial, destination: message.sender, wantsReply: !message.noReplyExpected)
        guard let path = message.path, let member = message.member else { return }
        let arguments: [DBusValue]
        do {
            arguments = try message.arguments()
        } catch {
            objectServer.reply(to: replyAddress, with: .failure(DBusError(.invalidArgs, "\(error)")))
            return
        }
        let call = DBusMethodCall(
            sender: message.sender ?? "", path: path, interface: message.interface, member: member,
            signature: message.signature, arguments: arguments)
        objectServer.dispatch(call, replyTo: replyAddress)
    }

    private static func translate(_ error: CDBus.DBusError, fallback: String) -> DBusError {
        // dbus_error_is_set() is `name != NULL`.
        guard let name = error.name else {
            return DBusError(.failed, fallback)
        }
        return DBusError(name: String(cString: name), message: error.message.map { String(cString: $0) } ?? fallback)
    }
}

/// Where the reply to a received method call goes.
struct ReplyAddress: Sendable {
    let serial: UInt32
    let destination: String?
    let wantsReply: Bool
}
