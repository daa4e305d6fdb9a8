import BlueZ
import DBus
import SMP
import TetherPrimitives

/// The SMP client core on a BLE connection, as Zephyr's SMP Bluetooth transport expects it (Zephyr "SMP Transport
/// Specification", "Bluetooth Low Energy (LE)"; subsys/mgmt/mcumgr/transport/src/smp_bt.c): the I/O edge of
/// SMPClient and ImageUploader, the BLE twin of SMPUDPSession. One session is one connection: when the link drops
/// the session is done, and the caller connects again (Device1.Connect) and opens a new one.
///
/// Its rules, each with its source:
///  1. The SMP characteristic is found under the device's resolved services (SMPBluetoothService).
///  2. Notifications are subscribed before the first write, as the gateway's own link does (DeviceLink): through
///     an AcquireNotify socket, one notification per packet, falling back to StartNotify's Value PropertiesChanged
///     where BlueZ refuses it (NotificationSource; doc/gatt-api.txt). A response is sent only to a client whose CCCD
///     is on (smp_bt.c `smp_bt_tx_pkt`): a request written first would have its answer lost.
///  3. Requests are Write Without Response (smp_bt.c declares the characteristic BT_GATT_CHRC_WRITE_WITHOUT_RESP):
///     through an AcquireWrite socket, or WriteValue with type "command" where BlueZ refuses AcquireWrite
///     (WriteWithoutResponse, which the link's LinkWriter uses too).
///  4. The write limit is the ATT MTU − 3 (a Write Command's header, Core v5.3 Vol 3 Part F §3.4.5.3) less the
///     gateway's safety margin (WriteWithoutResponse.maximumValueLength). The MTU is AcquireNotify's or AcquireWrite's,
///     as smpclient/bleak take it, else the characteristic's MTU property (bluez-dbus-facts.md: read it after the
///     services resolve).
///  5. A request is split into several writes only for a device that reassembles
///     (CONFIG_MCUMGR_TRANSPORT_BT_REASSEMBLY, smp_reassembly.c); MCUmgr has no command that tells, so the caller
///     says. Responses longer than one notification are joined by the client core's SMPReassembler by the header's
///     length (smp_bt.c splits them at MTU − 3 with no framing of its own).
///  6. Uploads keep up to buf_count − 1 requests in flight only where the device reassembles; otherwise one at a
///     time. A write the device has no buffer for is refused silently (a Write Command has no response, Core v5.3
///     Vol 3 Part F §3.4.5.3; smp_bt.c returns an ATT error that goes nowhere), which costs the client a whole
///     time-out; a device that does not reassemble takes requests of at most MTU − 3 bytes, so a window saves little.
///  7. A lost link (the notification stream ends: socket EOF or Notifying=false; or a write refused as not
///     connected) fails what is waiting with `.client(.connectionLost)` and ends the session; an upload keeps its
///     state in the ImageUploader and resumes on the next session from the device's offset (ImageUploader rule 5).
///
/// Not Sendable: one task drives it.
public final class SMPBluetoothSession {
    public struct Settings: Hashable, Sendable {
        public var version: SMPVersion = .v2
        /// CONFIG_MCUMGR_TRANSPORT_BT_REASSEMBLY on the device (rules 5 and 6).
        public var deviceReassembles = false
        /// A BLE link does not lose notifications while it is up; a request can still go unanswered when the device
        /// refused its write silently (rule 6), so it is written again after this long.
        public var timeout: Duration = .seconds(5)
        public var retries = 2
        /// Bound of each BlueZ call while opening the session.
        public var openTimeout: Duration = .seconds(10)

        public init() {}
    }

    private enum Input {
        case notification([UInt8])
        case linkLost
        /// A wait's deadline may have passed.
        case tick
    }

    public let device: DBusObjectPath
    /// The ATT MTU of the connection (rule 4).
    public let mtu: Int
    public let notifyMethod: NotificationSource.Method
    public let settings: Settings
    private var client: SMPClient
    private let writer: WriteWithoutResponse
    private var inputs: AsyncStream<Input>.AsyncIterator
    private let continuation: AsyncStream<Input>.Continuation
    private let forwarding: Task<Void, Never>
    private var linkIsLost = false
    private let start = ContinuousClock.now

    private init(
        device: DBusObjectPath, mtu: Int, subscription: NotificationSource.Subscription, writer: WriteWithoutResponse, settings: Settings
    ) {
        self.device = device
        self.mtu = mtu
        self.notifyMethod = subscription.method
        self.settings = settings
        self.writer = writer
        client = SMPClient(
            configuration: SMPClient.Configuration(
                version: settings.version, writeLimit: writer.maximumValueLength,
                deviceReassembles: settings.deviceReassembles, timeout: settings.timeout, retries: settings.retries))
        let (stream, continuation) = AsyncStream.makeStream(of: Input.self)
        inputs = stream.makeAsyncIterator()
        self.continuation = continuation
        let values = subscription.values
        forwarding = Task {
            for await batch in values {
                for value in batch { continuation.yield(.notification(value)) }
            }
            continuation.yield(.linkLost)  // rule 7
        }
    }

    deinit { close() }

    /// Opens the session on a connected device whose services are resolved (rules 1–4). `services` are the device's
    /// resolved GATT services; nil reads them once from BlueZ.
    public static func open(
        bluez session: BlueZSession, device: DBusObjectPath, services: [GattService]? = nil, settings: Settings = Settings()
    ) async throws(FirmwareTransportError) -> SMPBluetoothSession {
        do {
            var resolved = services ?? []
            if services == nil {
                resolved = try await GattServicesSnapshot.read(Device(session: session, path: device), session: session, timeout: settings.openTimeout)
            }
            guard let found = SMPBluetoothService.characteristic(in: resolved) else {
                throw FirmwareTransportError.transport("\(device) has no MCUmgr SMP service (\(SMPBluetoothUUID.service))")
            }
            let characteristic = GattCharacteristic(session: session, path: found.path)
            let subscription = try await NotificationSource().subscribe(to: characteristic, of: device, timeout: settings.openTimeout)
            let (writer, writeMTU) = try await WriteWithoutResponse.open(characteristic, timeout: settings.openTimeout)
            return SMPBluetoothSession(
                device: device, mtu: subscription.mtu ?? writeMTU, subscription: subscription, writer: writer, settings: settings)
        } catch let error as FirmwareTransportError {
            throw error
        } catch {
            throw .transport("opening SMP on \(device): \(error)")
        }
    }

    /// Ends the subscription and the write socket (BlueZ sees both close).
    public func close() {
        forwarding.cancel()
        continuation.finish()
        writer.close()
    }

    public var configuration: SMPClient.Configuration { client.configuration }

    /// Bytes per write (rule 4).
    public var writeLimit: Int { client.configuration.writeLimit }

    /// `base` with this link's client configuration and rule 6's window.
    public func uploaderConfiguration(_ base: ImageUploader.Configuration = ImageUploader.Configuration()) -> ImageUploader.Configuration {
        var configuration = base
        configuration.client = client.configuration
        if !settings.deviceReassembles { configuration.maxWindow = 1 }
        return configuration
    }

    public var now: Timestamp {
        let elapsed = start.duration(to: ContinuousClock.now)
        return Timestamp(nanoseconds: elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
    }

    /// Sends `request` and waits for its answer (retrying as the core orders). The answer may carry a device error.
    public func perform(_ request: SMPRequest, timeout: Duration? = nil) async throws(FirmwareTransportError) -> SMPResponse {
        guard !linkIsLost else { throw .client(.connectionLost) }
        let started = try SMPRequestExchange.start(request, client: client, timeout: timeout, at: now)
        var exchange = started.0
        defer { client = exchange.client }
        return try await run(&exchange, from: started.1, observe: { _ in })
    }

    /// Drives an ImageUploader: from its start, or, when an earlier session lost its link, again from the device's
    /// offset (rule 7). Throws `.client(.connectionLost)` when this link drops; the uploader keeps what it knows.
    public func drive(_ uploader: inout ImageUploader, observe: (UploadOrder) -> Void) async throws(FirmwareTransportError) {
        guard !linkIsLost else { throw .client(.connectionLost) }
        let started = SMPUploadExchange.start(uploader, writeLimit: writeLimit, at: now)
        var exchange = started.0
        defer { uploader = exchange.uploader }
        try await run(&exchange, from: started.1, observe: observe)
    }

    public func echo(_ text: String) async throws(FirmwareTransportError) -> String {
        try SMPCommandAnswer.echo(await perform(.echo(text)))
    }

    public func parameters() async throws(FirmwareTransportError) -> SMPParameters {
        try SMPCommandAnswer.parameters(await perform(.parameters))
    }

    public func imageState() async throws(FirmwareTransportError) -> SMPImageState {
        try SMPCommandAnswer.imageState(await perform(.imageState))
    }

    /// Marks the image with this SHA256 TLV hash to run once, on test, at the next reset.
    public func test(hash: [UInt8]) async throws(FirmwareTransportError) -> SMPImageState {
        try SMPCommandAnswer.imageState(await perform(.imageStateWrite(hash: hash, confirm: false)))
    }

    /// Confirms the running image (hash nil), or makes the image with this hash permanent.
    public func confirm(hash: [UInt8]?) async throws(FirmwareTransportError) -> SMPImageState {
        try SMPCommandAnswer.imageState(await perform(.imageStateWrite(hash: hash, confirm: true)))
    }

    /// Zephyr's os_mgmt answers a reset first and reboots after: the answer arrives, then the link drops.
    public func reset() async throws(FirmwareTransportError) { _ = try SMPCommandAnswer.checked(await perform(.reset())) }

    /// Erases the secondary slot (the device refuses while its image is pending or is the one a revert goes back to).
    public func erase() async throws(FirmwareTransportError) { _ = try SMPCommandAnswer.checked(await perform(.imageErase())) }

    /// The I/O half of an exchange: write, report, and feed it a notification, its deadline or the link's loss
    /// until it has an outcome.
    private func run<Exchange: SMPExchange>(
        _ exchange: inout Exchange, from first: SMPExchangeStep<Exchange.Outcome>, observe: (UploadOrder) -> Void
    ) async throws(FirmwareTransportError) -> Exchange.Outcome {
        var step = first
        while true {
            for bytes in step.writes where step.outcome == nil {
                if let lost = try await write(bytes, in: &exchange) { step = lost }
            }
            step.observed.forEach(observe)
            if let outcome = step.outcome { return try outcome.get() }
            switch await next(until: exchange.deadline ?? now) {
            case .notification(let bytes): step = exchange.received(bytes, at: now)
            case .linkLost:
                linkIsLost = true
                step = exchange.linkLost(at: now)
            case .tick: step = exchange.timedOut(at: now)
            }
        }
    }

    /// Writes one value; the exchange's last step when the link turned out to be lost (rule 7).
    private func write<Exchange: SMPExchange>(_ bytes: [UInt8], in exchange: inout Exchange) async throws(FirmwareTransportError)
        -> SMPExchangeStep<Exchange.Outcome>?
    {
        do {
            try await writer.write(bytes)
            return nil
        } catch BlueZError.notConnected {
            linkIsLost = true
            return exchange.linkLost(at: now)
        } catch {
            throw .transport("writing to \(device)'s SMP characteristic: \(error)")
        }
    }

    /// The next input, or `.tick` once `deadline` has passed. A tick is yielded into the same stream as the
    /// notifications, so one iterator reads both; a tick left over from an earlier wait is skipped.
    private func next(until deadline: Timestamp) async -> Input {
        let wait = now.duration(to: deadline)
        guard wait > .zero else { return .tick }
        let continuation = continuation
        let timer = Task {
            guard (try? await Task.sleep(for: wait)) != nil else { return }
            continuation.yield(.tick)
        }
        defer { timer.cancel() }
        while true {
            guard let input = await inputs.next() else { return .linkLost }
            if case .tick = input, now < deadline { continue }
            return input
        }
    }
}
