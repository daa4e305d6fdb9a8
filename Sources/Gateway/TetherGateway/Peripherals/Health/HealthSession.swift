import BlueZ
import HealthProfiles
import Synchronization
import TetherPrimitives
import TetherStore

/// The hot lane's I/O for a standard health device: on every connection, every measurement characteristic the
/// device's health services offer is subscribed before anything else happens (a value sent before the
/// subscription is lost: bleak #374), indicate-only ones with StartNotify (bluetoothd confirms each indication),
/// and every value goes to the sink in arrival order with its time of receipt.
///
/// A device that offers a health service but none of its measurements is refused at set-up: nothing it could send
/// would reach the gateway.
final class HealthSession: PeripheralSession {
    let kind = PeripheralKind.health
    private let address: String
    private let sink: any HealthValueSink
    private let clock: GatewayClock
    private let forwarding = Mutex<(link: UInt64, tasks: [Task<Void, Never>])?>(nil)

    init(address: String, sink: any HealthValueSink, clock: GatewayClock) {
        self.address = address
        self.sink = sink
        self.clock = clock
    }

    /// The characteristics to subscribe on this device: each offered health service's subscribed characteristics
    /// that the device actually has (optional ones may be missing), with the service they belong to.
    static func subscriptions(in services: [GattService]) -> [(HealthService, HealthService.Subscribed, GattService.Characteristic)] {
        var result: [(HealthService, HealthService.Subscribed, GattService.Characteristic)] = []
        for service in services {
            guard let number = service.assignedNumber, let health = HealthService(assignedNumber: number) else {
                continue
            }
            for wanted in health.subscribed {
                guard let characteristic = service.characteristic(hex4(wanted.uuid)), characteristic.canSubscribe else { continue }
                result.append((health, wanted, characteristic))
            }
        }
        return result
    }

    func linkUp(_ link: PeripheralLink) async throws {
        let wanted = Self.subscriptions(in: link.services)
        guard !wanted.isEmpty else {
            throw GatewayError.notPermitted("\(link.device.path) offers a health service but none of its measurements")
        }
        await sink.linkStarted(address: address, link: link.number, clock: await Self.readClock(link, at: clock))
        var streams: [(HealthService, UInt16, NotificationBatches)] = []
        for (service, subscribed, characteristic) in wanted {
            let subscription = try await link.notificationSource.subscribe(
                to: GattCharacteristic(session: link.session, path: characteristic.path), of: link.device.path,
                timeout: link.timeout, allowingStartNotify: link.notifyPreference != .acquireOnly,
                indicatesOnly: characteristic.indicatesOnly)
            streams.append((service, subscribed.uuid, subscription.values))
        }
        let (address, sink, clock, number) = (address, sink, clock, link.number)
        let tasks = streams.map { service, characteristic, values in
            Task {
                for await batch in values {
                    for bytes in batch {
                        await sink.received(HealthCharacteristicValue(
                            address: address, link: number, service: service, characteristic: characteristic,
                            bytes: bytes, receivedAt: clock.linkNow()))
                    }
                }
            }
        }
        let previous = forwarding.withLock { current in
            defer { current = (number, tasks) }
            return current
        }
        previous?.tasks.forEach { $0.cancel() }
    }

    /// Current Time Service (0x1805, CTS v1.1 §3.1/§3.2): the device's clock read now, beside the gateway's clock at
    /// the answer, and its Local Time Information. A device without the service, or a read that fails, leaves what
    /// is unknown unknown; the derivation then says so in each reading's time basis.
    static func readClock(_ link: PeripheralLink, at clock: GatewayClock) async -> DeviceClockFacts {
        var facts = DeviceClockFacts()
        guard let service = link.service("1805") else { return facts }
        if let characteristic = service.characteristic("2A0F"), characteristic.flags.contains("read"),
            let bytes = try? await GattCharacteristic(session: link.session, path: characteristic.path).readValue(timeout: link.timeout),
            let information = try? LocalTimeInformation.decode(bytes)
        {
            facts.setting = .localTime(information)
        }
        if let characteristic = service.characteristic("2A2B"), characteristic.flags.contains("read"),
            let bytes = try? await GattCharacteristic(session: link.session, path: characteristic.path).readValue(timeout: link.timeout),
            let current = try? CurrentTime.decode(bytes)
        {
            facts.reading = DeviceClockFacts.Reading(
                deviceTime: current.dateTime, fractions256: current.fractions256, receivedAt: clock.linkNow())
        }
        return facts
    }

    func linkDown() {
        guard let ended = forwarding.withLock({ current in defer { current = nil }; return current }) else { return }
        ended.tasks.forEach { $0.cancel() }
        let (sink, address) = (sink, address)
        Task { await sink.linkEnded(address: address, link: ended.link) }
    }

    func drain() async {}

    func finish() {
        linkDown()
    }

    private static func hex4(_ value: UInt16) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }
}
