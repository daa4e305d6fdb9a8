import DBus
import Foundation
import Glibc

/// `org.bluez.GattCharacteristic1`: a remote characteristic, e.g. `.../dev_XX/service0010/char0013`.
public struct GattCharacteristic: Hashable, Sendable {
    public enum WriteType: String, Hashable, Sendable {
        /// Write Request: BlueZ waits for the device's Write Response.
        case request
        /// Write Command (write without response).
        case command
        /// Reliable (prepared) write.
        case reliable
    }

    /// ATT header bytes in a notification or write (opcode + handle).
    public static let attHeaderSize = 3
    /// Kept below MTU − 3 so a controller or stack that counts differently never truncates a value.
    public static let defaultSafetyMargin = 2
    /// The smallest ATT MTU (Bluetooth Core: 23).
    public static let minimumMTU = 23
    /// The largest value written at once, whatever the MTU. ATT allows 512 (Core v5.3 Vol 3 Part F §3.2.9), but
    /// BlueZ's GATT server up to 5.66 checked the Write Command's whole parameter length, handle included, against
    /// 512 (src/shared/gatt-server.c `write_cb`: `check_length(length, 0)`, fixed later to `length - 2`), so a
    /// peripheral on bluetoothd 5.66 refuses a 511- or 512-byte value, and for a Write Command it refuses silently.
    /// Seen in the real-BlueZ VM: an SMP upload's 512-byte first chunk went unanswered three times while 9-byte
    /// requests were answered. Two bytes less costs 0.4% of a full-MTU write.
    public static let largestWrittenValue = 510

    public let path: DBusObjectPath
    let session: BlueZSession

    public init(session: BlueZSession, path: DBusObjectPath) {
        self.session = session
        self.path = path
    }

    public static func == (lhs: GattCharacteristic, rhs: GattCharacteristic) -> Bool { lhs.path == rhs.path }
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }

    public func properties() async throws -> [String: DBusValue] {
        try await session.properties(path, BlueZInterfaceName.gattCharacteristic)
    }

    /// `ReadValue(a{sv})`. BlueZ also announces the value as a Value PropertiesChanged before replying.
    public func readValue(offset: UInt16 = 0, timeout: Duration = BlueZSession.defaultTimeout) async throws -> [UInt8] {
        let options: [String: DBusValue] = offset == 0 ? [:] : ["offset": .uint16(offset)]
        let reply = try await session.call(
            path, BlueZInterfaceName.gattCharacteristic, "ReadValue", [.variantDictionary(options)], timeout: timeout)
        guard let bytes = reply.first?.bytesValue else {
            throw BlueZError.dbus(DBusError(.inconsistentMessage, "ReadValue on \(path) returned \(reply)"))
        }
        return bytes
    }

    /// `WriteValue(ay, a{sv} {"type": ...})`.
    public func writeValue(
        _ bytes: [UInt8], type: WriteType = .request, timeout: Duration = BlueZSession.defaultTimeout
    ) async throws {
        _ = try await session.call(
            path, BlueZInterfaceName.gattCharacteristic, "WriteValue",
            [.bytes(bytes), .variantDictionary(["type": .string(type.rawValue)])], timeout: timeout)
    }

    /// The negotiated ATT MTU (read it after services resolve).
    public func mtu() async throws -> Int {
        guard let mtu = try await session.property(path, BlueZInterfaceName.gattCharacteristic, "MTU").uint16Value
        else { throw BlueZError.dbus(DBusError(.inconsistentMessage, "MTU of \(path) is not a uint16")) }
        return Int(mtu)
    }

    /// The largest value to send per packet: MTU − 3 − `safetyMargin`, never below 20, never above
    /// `largestWrittenValue`.
    public func maximumValueLength(safetyMargin: Int = GattCharacteristic.defaultSafetyMargin) async throws -> Int {
        Self.maximumValueLength(mtu: try await mtu(), safetyMargin: safetyMargin)
    }

    public static func maximumValueLength(mtu: Int, safetyMargin: Int = defaultSafetyMargin) -> Int {
        min(largestWrittenValue, max(minimumMTU - attHeaderSize, mtu - attHeaderSize - max(safetyMargin, 0)))
    }

    /// `StartNotify()`, then the Value PropertiesChanged as a stream (subscribed before StartNotify, so the first
    /// notification is not missed). The stream finishes when `Notifying` turns false (link lost) or org.bluez
    /// goes away; ending the stream calls `StopNotify()`.
    ///
    /// BlueZ keeps one session per bus connection: two streams on one connection share it, and a `ReadValue`
    /// of this characteristic also shows up here (BlueZ announces read values the same way).
    ///
    /// Each element of the stream is a batch: the values that arrived together, in order (see `NotificationBatches`).
    public func startNotify(timeout: Duration = BlueZSession.defaultTimeout) async throws -> NotificationBatches {
        let rule = DBusMatchRule(
            sender: BlueZSession.serviceName, interface: BlueZInterfaceName.properties, member: "PropertiesChanged",
            path: path, arguments: [0: BlueZInterfaceName.gattCharacteristic])
        if let wire = session.notifications {
            return try await startNotify(on: wire, rule: rule, timeout: timeout)
        }
        let session = session
        let path = path
        let values: NotificationBatches
        do {
            // The Value is picked out on the connection's loop thread: one hand-over per notification.
            values = try await session.connection.signals(
                matching: rule,
                onTermination: {
                    // Subscriptions end with their owner.
                    Task { _ = try? await session.call(path, BlueZInterfaceName.gattCharacteristic, "StopNotify") }
                },
                filter: Self.notificationValue)
        } catch {
            throw BlueZError.mapping(error)
        }
        // If StartNotify fails, `values` is dropped on the way out: an AsyncStream that nobody holds terminates, so
        // the match rule is removed then, not when the connection closes (SubscriptionCleanupTests counts them).
        _ = try await session.call(path, BlueZInterfaceName.gattCharacteristic, "StartNotify", timeout: timeout)
        return values
    }

    /// StartNotify over the wire-protocol connection: each Value is copied straight out of the receive buffer.
    private func startNotify(on wire: DBusWireConnection, rule: DBusMatchRule, timeout: Duration) async throws
        -> NotificationBatches
    {
        let path = path
        @Sendable func callCharacteristic(_ member: String, timeout: Duration) async throws {
            do {
                _ = try await wire.call(
                    destination: BlueZSession.serviceName, path: path, interface: BlueZInterfaceName.gattCharacteristic,
                    member: member, timeout: timeout)
            } catch {
                throw BlueZError.mapping(error)
            }
        }
        let values: NotificationBatches
        do {
            values = try await wire.signalBatches(
                matching: rule,
                onTermination: { Task { try? await callCharacteristic("StopNotify", timeout: BlueZSession.defaultTimeout) } },
                collect: Self.collectNotification)
        } catch {
            throw BlueZError.mapping(error)
        }
        try await callCharacteristic("StartNotify", timeout: timeout)  // on failure `values` ends as it is dropped
        return values
    }

    /// A Value PropertiesChanged → its bytes (a batch of one); `Notifying=false` (link lost, or StopNotify) ends
    /// the stream.
    @Sendable static func notificationValue(_ signal: DBusSignal) -> DBusSignalFilterResult<[[UInt8]]> {
        guard signal.arguments.count >= 2, let entries = signal.arguments[1].dictionaryEntries else { return .skip }
        var value: [UInt8]?
        for entry in entries {
            switch entry.key.stringValue {
            case "Value"?: value = entry.value.unwrappingVariants.bytesValue
            case "Notifying"? where entry.value.unwrappingVariants == .bool(false): return .finish
            default: continue
            }
        }
        return value.map { .deliver([$0]) } ?? .skip
    }

    /// The same, read in place from the receive buffer: `PropertiesChanged(s interface, a{sv} changed,
    /// as invalidated)`, only the Value's bytes copied out.
    @Sendable static func collectNotification(_ signal: DBusWireSignal, into batch: inout [[UInt8]]) throws
        -> DBusWireCollectOutcome
    {
        guard signal.hasSignature("sa{sv}as") else { return .keep }
        var body = signal.body
        guard try body.readString(equals: BlueZInterfaceName.gattCharacteristic) else { return .keep }
        var value: [UInt8]?
        var stopped = false
        try body.readVariantDictionary { key, variant in
            if variant.holdsBytes, DBusWireReader.bytes(key, equal: "Value") {
                value = Array(try variant.readBytes())
            } else if variant.holds("b"), DBusWireReader.bytes(key, equal: "Notifying") {
                stopped = try !variant.readBool()
            }
        }
        if let value { batch.append(value) }
        return stopped ? .end : .keep
    }

    /// `AcquireNotify(a{sv})`: notifications on a SOCK_SEQPACKET socket, one value per packet.
    public func acquireNotify(timeout: Duration = BlueZSession.defaultTimeout) async throws -> NotifyAcquisition {
        let reply = try await session.call(
            path, BlueZInterfaceName.gattCharacteristic, "AcquireNotify", [.variantDictionary([:])], timeout: timeout)
        guard reply.count == 2, let fd = reply[0].fileDescriptorValue, let mtu = reply[1].uint16Value else {
            throw BlueZError.dbus(DBusError(.inconsistentMessage, "AcquireNotify on \(path) returned \(reply)"))
        }
        return NotifyAcquisition(descriptor: fd, mtu: Int(mtu))
    }

    /// `AcquireWrite(a{sv})`: writes without response on a SOCK_SEQPACKET socket, one value per packet.
    public func acquireWrite(timeout: Duration = BlueZSession.defaultTimeout) async throws -> WriteAcquisition {
        let reply = try await session.call(
            path, BlueZInterfaceName.gattCharacteristic, "AcquireWrite", [.variantDictionary([:])], timeout: timeout)
        guard reply.count == 2, let fd = reply[0].fileDescriptorValue, let mtu = reply[1].uint16Value else {
            throw BlueZError.dbus(DBusError(.inconsistentMessage, "AcquireWrite on \(path) returned \(reply)"))
        }
        return WriteAcquisition(descriptor: fd, mtu: Int(mtu))
    }
}

/// Notifications as they arrive: each element is a batch of values (one per ATT notification) that arrived
/// together, in order. Batches let a burst wake the consumer once instead of once per notification.
public typealias NotificationBatches = AsyncStream<[[UInt8]]>

/// An AcquireNotify socket: `packets` yields the notifications (one per packet) in batches and finishes when BlueZ
/// closes its end (link lost) or `close()` is called. Closing the socket ends the acquisition in BlueZ.
public final class NotifyAcquisition: Sendable {
    /// At most this many packets per batch, so a consumer sees the first ones while a long burst is still read.
    static let maximumBatch = 64

    public let mtu: Int
    public let packets: NotificationBatches
    private let descriptor: OwnedFileDescriptor

    init(descriptor: OwnedFileDescriptor, mtu: Int) {
        self.descriptor = descriptor
        self.mtu = mtu
        let (stream, continuation) = AsyncStream.makeStream(of: [[UInt8]].self)
        packets = stream
        continuation.onTermination = { _ in
            descriptor.withDescriptor { fd in _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        }
        // One process-wide epoll thread reads every notify socket (NotifySocketPoller says why); shutdown() makes
        // the socket readable with EOF, which ends the stream there. BlueZ makes the socketpair with
        // SOCK_NONBLOCK (src/gatt-client.c, create_sock), which the poller needs and keeps.
        if !NotifySocketPoller.shared.watch(descriptor, capacity: max(mtu, 512), continuation: continuation) {
            continuation.finish()
            descriptor.close()
        }
    }

    deinit {
        descriptor.withDescriptor { fd in _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Ends the acquisition: the stream finishes and BlueZ sees the socket close.
    public func close() {
        descriptor.withDescriptor { fd in _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }
}

/// An AcquireWrite socket: each `send` is one write without response of at most `maximumValueLength` bytes.
public final class WriteAcquisition: Sendable {
    public let mtu: Int
    private let descriptor: OwnedFileDescriptor

    init(descriptor: OwnedFileDescriptor, mtu: Int) {
        self.descriptor = descriptor
        self.mtu = mtu
    }

    /// The largest value per packet (MTU − 3 − safety margin).
    public var maximumValueLength: Int { GattCharacteristic.maximumValueLength(mtu: mtu) }

    /// Sends one value. When the socket is full, waits for room (polling without blocking a concurrency thread)
    /// at most `timeout`; `.timeout` then, `.notConnected` once BlueZ closed its end.
    public func send(_ bytes: [UInt8], timeout: Duration = .seconds(5)) async throws {
        guard bytes.count <= max(mtu - GattCharacteristic.attHeaderSize, 0) else { throw BlueZError.invalidLength }
        let deadline = ContinuousClock.now + timeout
        while true {
            let result: Int? = descriptor.withDescriptor { fd in
                let sent = bytes.withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                return sent >= 0 ? sent : -Int(errno)
            }
            guard let result else { throw BlueZError.notConnected }
            if result == bytes.count { return }
            guard result == -Int(EAGAIN) || result == -Int(EWOULDBLOCK) || result == -Int(EINTR) else {
                throw BlueZError.notConnected
            }
            guard ContinuousClock.now < deadline else { throw BlueZError.timeout }
            try await waitWritable(milliseconds: 5)
        }
    }

    /// Closes the socket: BlueZ ends the acquisition.
    public func close() {
        descriptor.close()
    }

    private func waitWritable(milliseconds: Int32) async throws {
        let ready = descriptor.withDescriptor { fd in
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            return poll(&poller, 1, 0) == 1
        }
        if ready != true { try await Task.sleep(for: .milliseconds(Int(milliseconds))) }
    }
}
