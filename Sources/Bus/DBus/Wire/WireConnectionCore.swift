import Foundation
import Glibc
import Synchronization

/// Everything that touches one wire-protocol connection's socket, confined to its loop thread.
///
/// The loop: run submitted jobs, write what is queued, then poll() the socket and the wakeup eventfd until the
/// nearest call deadline. When the socket is readable it reads everything available in large chunks and
/// dispatches every complete message straight from the receive buffer: a signal's filter sees the bytes where
/// they landed, so a notification costs one copy of its value and no per-message allocation in between.
final class WireConnectionCore {
    typealias CallCompletion = (Result<[DBusValue], any Error>) -> Void

    private struct PendingCall {
        let token: UInt64
        let deadline: ContinuousClock.Instant
        let timeout: Duration
        let completion: CallCompletion
    }

    /// A class so that dispatching a signal to N subscriptions costs N reference counts, not a copy of every
    /// rule's byte arrays.
    final class Subscription: Sendable {
        let id: UInt64
        let match: WireMatch
        let collector: any WireSignalCollector
        let ruleText: String

        init(id: UInt64, match: WireMatch, collector: any WireSignalCollector, ruleText: String) {
            self.id = id
            self.match = match
            self.collector = collector
            self.ruleText = ruleText
        }
    }

    /// Reads are this large: a burst of notifications (about 200 bytes each) is drained in a few syscalls.
    static let readChunk = 64 * 1024

    private let loop: ConnectionLoop<WireConnectionCore>
    private let serials: WireSerials
    private let descriptor: Int32
    /// Milliseconds (poll's unit) to pause after a read that delivered signals; 0 for none.
    private let coalescingMilliseconds: Int32
    private var buffer: UnsafeMutableRawBufferPointer
    private var readStart = 0
    private var readEnd = 0
    private var outgoing: [UInt8] = []
    private var outgoingOffset = 0
    private var pendingCalls: [UInt32: PendingCall] = [:]
    /// In subscription order; a handful per connection, so a linear scan beats hashing.
    private var subscriptions: [Subscription] = []
    private var isDisconnected = false
    private var dispatchedSignals = 0

    private init(
        loop: ConnectionLoop<WireConnectionCore>, serials: WireSerials, descriptor: Int32, coalescing: Duration
    ) {
        self.loop = loop
        self.serials = serials
        self.descriptor = descriptor
        let (seconds, attoseconds) = coalescing.components
        coalescingMilliseconds =
            coalescing > .zero
            ? Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000) : 0
        buffer = .allocate(byteCount: 2 * Self.readChunk, alignment: 8)
    }

    deinit {
        buffer.deallocate()
    }

    /// Starts the loop thread: connect, authenticate, Hello; `opened` receives the unique name or the failure.
    static func startThread(
        address: String, loop: ConnectionLoop<WireConnectionCore>, serials: WireSerials, coalescing: Duration,
        opened: CheckedContinuation<String, any Error>
    ) {
        NamedThread.start("DBus wire") {
            do {
                let descriptor = try WireTransport.open(address, handshakeTimeout: .seconds(25))
                let core = WireConnectionCore(
                    loop: loop, serials: serials, descriptor: descriptor, coalescing: coalescing)
                core.sayHello(opened)
                core.run()
                core.shutdown()
            } catch {
                opened.resume(throwing: error)
            }
            for job in loop.close() {
                job(nil)
            }
            loop.finishExit()
        }
    }

    /// Spec: "Before an application is able to send messages to other applications it must send the
    /// org.freedesktop.DBus.Hello() message to the message bus to obtain a unique name."
    private func sayHello(_ opened: CheckedContinuation<String, any Error>) {
        callBus("Hello", []) { [weak self] result in
            switch result {
            case .success(let reply):
                if let name = reply.first?.stringValue {
                    opened.resume(returning: name)
                } else {
                    opened.resume(throwing: DBusError(.failed, "The bus assigned no unique name"))
                    self?.isDisconnected = true
                }
            case .failure(let error):
                opened.resume(throwing: error)
                self?.isDisconnected = true
            }
        }
    }

    // MARK: The loop

    private func run() {
        // After a coalescing pause the socket is read straight away: data has almost surely arrived, and an empty
        // read (EAGAIN) costs no more than the poll() it replaces.
        var readWithoutPolling = false
        while true {
            let work = loop.takeWork()
            for job in work.jobs {
                job(self)
            }
            if work.stop || isDisconnected { return }
            flush()
            if isDisconnected { return }

            var readable = readWithoutPolling
            if !readWithoutPolling {
                var events = Int16(POLLIN)
                if outgoingOffset < outgoing.count { events |= Int16(POLLOUT) }
                var descriptors = (
                    pollfd(fd: loop.wakeupDescriptor, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: descriptor, events: events, revents: 0)
                )
                let result = withUnsafeMutableBytes(of: &descriptors) { raw in
                    poll(raw.baseAddress!.assumingMemoryBound(to: pollfd.self), 2, pollTimeoutMilliseconds())
                }
                if result < 0 { continue }  // EINTR
                if descriptors.0.revents != 0 {
                    loop.drainWakeup()
                }
                readable = descriptors.1.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0
            }
            readWithoutPolling = false
            if readable {
                let delivered = readAvailable()
                if delivered > 0 {
                    pauseToCoalesce(afterDelivering: delivered)
                    readWithoutPolling = coalescingMilliseconds > 0
                }
            }
            expireCalls(now: .now)
        }
    }

    /// Interrupt moderation: after a read that delivered signals, wait briefly (unless a job arrives) so that the
    /// rest of a burst is read in one go. A stream of N signals a second then costs one wake-up per interval
    /// instead of one per signal, in this thread and in the tasks consuming the streams. A lone signal was
    /// already delivered before the pause, so the pause only delays signals that arrive during it, by at most
    /// the interval (default 1 ms; BLE connection intervals are 7.5 ms and up).
    ///
    /// A read that delivered `busyBatch` or more signals means a sustained stream: the next pause is twice the
    /// interval, halving the wake-ups again. Not longer: dbus-daemon's socket buffer (about 200 KiB, and each
    /// small message takes about 1 KiB of it) must not fill while this thread sleeps, or the bus starts queueing
    /// for this connection.
    private func pauseToCoalesce(afterDelivering delivered: Int) {
        guard coalescingMilliseconds > 0 else { return }
        let interval = delivered >= Self.busyBatch ? 2 * coalescingMilliseconds : coalescingMilliseconds
        var wakeup = pollfd(fd: loop.wakeupDescriptor, events: Int16(POLLIN), revents: 0)
        _ = poll(&wakeup, 1, interval)
    }

    static let busyBatch = 32

    private func shutdown() {
        // Best effort: what is queued (a RemoveMatch, a reply) goes out before the socket closes.
        if !isDisconnected, outgoingOffset < outgoing.count {
            _ = outgoing[outgoingOffset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
        }
        _ = Glibc.close(descriptor)
        isDisconnected = true
        let calls = pendingCalls.values
        pendingCalls.removeAll()
        for call in calls {
            call.completion(.failure(DBusError.connectionClosed))
        }
        let ended = subscriptions
        subscriptions.removeAll()
        for subscription in ended {
            subscription.collector.finish()
        }
    }

    private func pollTimeoutMilliseconds() -> Int32 {
        guard let nearest = pendingCalls.values.map(\.deadline).min() else { return -1 }
        let remaining = ContinuousClock.now.duration(to: nearest)
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    private func expireCalls(now: ContinuousClock.Instant) {
        guard !pendingCalls.isEmpty else { return }
        for (serial, call) in pendingCalls where call.deadline <= now {
            pendingCalls[serial] = nil
            call.completion(.failure(DBusError(.noReply, "Did not receive a reply within \(call.timeout)")))
        }
    }

    // MARK: Writing

    /// Queues an encoded message; it is written on the next pass of the loop.
    func enqueue(_ message: [UInt8]) {
        if outgoingOffset == outgoing.count {
            outgoing.removeAll(keepingCapacity: true)
            outgoingOffset = 0
        }
        outgoing.append(contentsOf: message)
    }

    private func flush() {
        while outgoingOffset < outgoing.count {
            let sent = outgoing[outgoingOffset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent > 0 {
                outgoingOffset += sent
            } else if sent < 0, errno == EINTR {
                continue
            } else if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                return
            } else {
                isDisconnected = true
                return
            }
        }
    }

    /// Sends a method call and calls `completion` (on this thread) with the reply, an error or `.noReply`.
    func startCall(
        _ message: [UInt8], serial: UInt32, token: UInt64, timeout: Duration, completion: @escaping CallCompletion
    ) {
        guard !isDisconnected else {
            completion(.failure(DBusError.connectionClosed))
            return
        }
        pendingCalls[serial] = PendingCall(token: token, deadline: .now + timeout, timeout: timeout, completion: completion)
        enqueue(message)
    }

    func cancelCall(token: UInt64) {
        guard let (serial, call) = pendingCalls.first(where: { $0.value.token == token }) else { return }
        pendingCalls[serial] = nil
        call.completion(.failure(CancellationError()))
    }

    private func callBus(_ member: String, _ arguments: [DBusValue], completion: CallCompletion?) {
        let serial = serials.next()
        do {
            let message = try WireMessageEncoder.methodCall(
                serial: serial, destination: SignalRouter.busName, path: SignalRouter.busPath,
                interface: SignalRouter.busInterface, member: member, arguments: arguments,
                flags: completion == nil ? WireMessageEncoder.noReplyExpected : 0)
            if let completion {
                startCall(message, serial: serial, token: 0, timeout: DBusConnection.defaultCallTimeout, completion: completion)
            } else {
                enqueue(message)
            }
        } catch {
            completion?(.failure(error))
        }
    }

    // MARK: Subscriptions

    func subscribe(_ subscription: Subscription, ready: @escaping (Result<Void, any Error>) -> Void) {
        subscriptions.append(subscription)
        callBus("AddMatch", [.string(subscription.ruleText)]) { [weak self] result in
            if case .failure = result {
                self?.remove(subscription.id)
                subscription.collector.finish()
            }
            ready(result.map { _ in () })
        }
    }

    func unsubscribe(id: UInt64) {
        guard let subscription = remove(id), !isDisconnected else { return }
        callBus("RemoveMatch", [.string(subscription.ruleText)], completion: nil)
    }

    @discardableResult
    private func remove(_ id: UInt64) -> Subscription? {
        guard let index = subscriptions.firstIndex(where: { $0.id == id }) else { return nil }
        return subscriptions.remove(at: index)
    }

    // MARK: Reading

    /// Reads and dispatches everything available; returns how many signals were dispatched.
    @discardableResult
    private func readAvailable() -> Int {
        dispatchedSignals = 0
        while !isDisconnected {
            reserveSpace()
            let space = buffer.count - readEnd
            let count = recv(descriptor, buffer.baseAddress! + readEnd, space, Int32(MSG_DONTWAIT))
            if count > 0 {
                readEnd += count
                dispatchComplete()
                flushBatches()
                if count < space { break }  // drained: the next read would say EAGAIN
            } else if count == 0 {
                isDisconnected = true
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                break
            } else {
                isDisconnected = true
            }
        }
        return dispatchedSignals
    }

    /// Makes room for at least one read chunk (and for the whole message at the front, however large).
    private func reserveSpace() {
        if readStart == readEnd {
            readStart = 0
            readEnd = 0
        }
        var needed = Self.readChunk
        let pending = UnsafeRawBufferPointer(rebasing: buffer[readStart..<readEnd])
        if let length = try? WireMessageView.length(ofMessageStartingWith: pending), length > pending.count {
            needed = max(needed, length - pending.count)
        }
        guard buffer.count - readEnd < needed else { return }
        let kept = readEnd - readStart
        if buffer.count - kept < needed {
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: kept + needed, alignment: 8)
            grown.baseAddress!.copyMemory(from: buffer.baseAddress! + readStart, byteCount: kept)
            buffer.deallocate()
            buffer = grown
        } else {
            (buffer.baseAddress!).copyMemory(from: buffer.baseAddress! + readStart, byteCount: kept)
        }
        readStart = 0
        readEnd = kept
    }

    private func dispatchComplete() {
        while !isDisconnected {
            let pending = UnsafeRawBufferPointer(rebasing: buffer[readStart..<readEnd])
            let length: Int
            do {
                guard let known = try WireMessageView.length(ofMessageStartingWith: pending), known <= pending.count
                else { return }
                length = known
            } catch {
                // Without a valid length there is no way to find the next message: the stream is lost.
                isDisconnected = true
                return
            }
            readStart += length
            if let message = try? WireMessageView(parsing: UnsafeRawBufferPointer(rebasing: pending[0..<length])) {
                dispatch(message)
            }
        }
    }

    private func dispatch(_ message: WireMessageView) {
        switch message.kind {
        case .signal:
            dispatchedSignals += 1
            deliver(DBusWireSignal(message: message))
        case .methodReturn, .error:
            guard let replySerial = message.replySerial, let call = pendingCalls.removeValue(forKey: replySerial)
            else { return }
            if message.kind == .error {
                let name = WireMessageView.string(message.errorName) ?? DBusError.Code.failed.name
                let text = (try? message.arguments().first?.stringValue) ?? ""
                call.completion(.failure(DBusError(name: name, message: text)))
            } else {
                call.completion(Result { try message.arguments() })
            }
        case .methodCall:
            answer(message)
        }
    }

    private func deliver(_ signal: DBusWireSignal) {
        var ended: [Subscription] = []
        for subscription in subscriptions where subscription.match.matches(signal.message) {
            if !subscription.collector.collect(signal) {
                ended.append(subscription)
            }
        }
        for subscription in ended {
            remove(subscription.id)
            subscription.collector.finish()
            callBus("RemoveMatch", [.string(subscription.ruleText)], completion: nil)
        }
    }

    /// Hands every subscription's batch from this read to its consumer.
    private func flushBatches() {
        for subscription in subscriptions {
            subscription.collector.flush()
        }
    }

    /// This connection exports no objects; like libdbus it answers `org.freedesktop.DBus.Peer` itself.
    private func answer(_ call: WireMessageView) {
        guard call.flags & WireMessageEncoder.noReplyExpected == 0 else { return }
        let isPeer = WireMessageView.field(call.interface, equals: Array("org.freedesktop.DBus.Peer".utf8))
        let member = WireMessageView.string(call.member) ?? ""
        let reply: [UInt8]?
        switch (isPeer, member) {
        case (true, "Ping"):
            reply = try? WireMessageEncoder.reply(
                serial: serials.next(), replySerial: call.serial, destination: WireMessageView.string(call.sender))
        case (true, "GetMachineId"):
            let machineID = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            reply = try? WireMessageEncoder.reply(
                serial: serials.next(), replySerial: call.serial, destination: WireMessageView.string(call.sender),
                arguments: [.string(machineID)])
        default:
            reply = try? WireMessageEncoder.reply(
                serial: serials.next(), replySerial: call.serial, destination: WireMessageView.string(call.sender),
                errorName: DBusError.Code.unknownObject.name, arguments: [.string("This connection exports no objects")])
        }
        if let reply { enqueue(reply) }
    }
}

/// Serials for one connection's outgoing messages: unique and never zero (spec).
final class WireSerials: Sendable {
    private let counter = Atomic<UInt32>(0)

    func next() -> UInt32 {
        while true {
            let serial = counter.wrappingAdd(1, ordering: .relaxed).newValue
            if serial != 0 { return serial }
        }
    }
}
