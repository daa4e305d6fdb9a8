import BlueZ
import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import HealthDeviceModel
import HealthProfiles
import Synchronization
import Testing
@testable import TetherGateway
import TetherPrimitives
import TetherStore
import TetherTestSupport

/// Records what a health session hands over.
final class RecordingHealthSink: HealthValueSink {
    let values = Mutex<[HealthCharacteristicValue]>([])
    let endedLinks = Mutex<[UInt64]>([])

    let clocks = Mutex<[DeviceClockFacts]>([])

    func linkStarted(address: String, link: UInt64, clock: DeviceClockFacts) async { clocks.withLock { $0.append(clock) } }
    func clockChanged(address: String, link: UInt64, clock: DeviceClockFacts, at: Timestamp) async { clocks.withLock { $0.append(clock) } }
    func received(_ value: HealthCharacteristicValue) async { values.withLock { $0.append(value) } }
    func linkEnded(address: String, link: UInt64) async { endedLinks.withLock { $0.append(link) } }

    func of(_ characteristic: UInt16) -> [HealthCharacteristicValue] {
        values.withLock { $0.filter { $0.characteristic == characteristic } }
    }
}

@Suite("Health sessions end to end: tether-sim's standard health devices through a real gateway")
struct HealthSessionTests {
    /// A cuff's Blood Pressure Measurement is indicate-only (BLS §3.1): AcquireNotify cannot serve it (tether-sim
    /// offers no NotifyAcquired on it, as bluetoothd), so the session subscribes with StartNotify. The cuff sends
    /// its stored readings as soon as indications are on and forgets each once confirmed; every one must reach the
    /// sink, then a live one, each as the cuff's bytes.
    @Test(.timeLimit(.minutes(2)))
    func aCuffsIndicationsReachTheSinkThroughStartNotify() async throws {
        var simulator = GatewayHarness.configuration(devices: 1)
        var cuff = HealthDeviceSettings(kind: .bloodPressure)
        cuff.storedRecords = 3
        cuff.clockSkewSeconds = 3_600  // the cuff's clock runs an hour ahead (a zone, or never corrected)
        simulator.devices[0].health = cuff
        let sink = RecordingHealthSink()
        var configuration = GatewayHarness.gatewayConfiguration()
        configuration.health = sink
        // AcquireNotify only: what fails an indicate-only characteristic subscribed the notification way (no
        // fallback to hide it), while the cuff's notify-only Intermediate Cuff Pressure still gets its socket.
        configuration.notifyPreference = .acquireOnly
        try await GatewayHarness.with(simulator: simulator, gateway: configuration) { harness in
            let address = GatewayHarness.address(1)
            _ = try await harness.gateway.pair(address: address, delegate: RejectingDelegate())
            try await waitUntil("the cuff's three stored readings arrive") { sink.of(0x2A35).count >= 3 }

            // Before any value, the session read the cuff's Current Time (CTS v1.1 §3.1) beside the gateway's clock:
            // the coincident reading that shows the hour the cuff's clock is ahead.
            let clock = try #require(sink.clocks.withLock { $0.first })
            let reading = try #require(clock.reading)
            let deviceSeconds = try #require(reading.deviceTime.secondsSinceEpochAsIfUTC)
            let skewSeconds = deviceSeconds - reading.receivedAt.nanoseconds / 1_000_000_000
            #expect(abs(skewSeconds - 3_600) <= 5, "device clock \(reading.deviceTime) at gateway \(reading.receivedAt)")

            let readings = sink.of(0x2A35)
            #expect(readings.count == 3)
            #expect(readings.allSatisfy { $0.service == .bloodPressure && $0.address == address })
            // BLS §3.1: flags, then systolic, diastolic and mean arterial pressure as SFLOATs (7 bytes at least).
            #expect(readings.allSatisfy { $0.bytes.count >= 7 })
            #expect(Set(readings.map(\.bytes)).count == 3, "three distinct readings, not one three times")
            let peripheral = try #require(try harness.storage.peripherals.peripheral(identityAddress: address))
            #expect(peripheral.kinds.contains(.health))
            #expect(await harness.gateway.device(address)?.lastError == nil)

            let taken = try await harness.simulated.control(
                "TakeMeasurement", [.objectPath(SimulatedBlueZ.devicePath(address)), .variantDictionary([:])])
            #expect(taken == [.bool(true)])
            try await waitUntil("the live reading arrives") { sink.of(0x2A35).count >= 4 }
            #expect(sink.of(0x2A35).count == 4)
            #expect(try await harness.simulated.statistics(address)["connected"] == .bool(true))
        }
    }

    /// A cuff indicates its stored readings as soon as its measurement's CCCD is on, and forgets each once
    /// bluetoothd confirms it, whatever happens next on the gateway's side. Here the next step of the set-up (the
    /// Intermediate Cuff Pressure subscription) takes 600 ms and then fails, so the link is abandoned: the readings
    /// that arrived meanwhile must still reach the sink, once each, and the next connection finds the cuff empty.
    @Test(.timeLimit(.minutes(2)))
    func readingsConfirmedBeforeASetUpFailsAreKept() async throws {
        var simulator = GatewayHarness.configuration(devices: 1)
        var cuff = HealthDeviceSettings(kind: .bloodPressure)
        cuff.storedRecords = 3
        simulator.devices[0].health = cuff
        let sink = RecordingHealthSink()
        var configuration = GatewayHarness.gatewayConfiguration()
        configuration.health = sink
        // AcquireNotify only, so the failed subscription is not retried another way within the set-up.
        configuration.notifyPreference = .acquireOnly
        try await GatewayHarness.with(simulator: simulator, gateway: configuration) { harness in
            let address = GatewayHarness.address(1)
            let taken = try await harness.simulated.control(
                "InjectFault",
                [.string("health-subscribe-failure"),
                 .variantDictionary(["characteristic": .uint16(0x2A36), "delay_ms": .uint32(600), "count": .uint32(1)])])
            #expect(taken.isEmpty)
            _ = try await harness.gateway.pair(address: address, delegate: RejectingDelegate())
            // The first set-up fails; the second (the fault spent) brings the cuff up.
            try await waitUntil("the cuff set up on a second connection", seconds: 60) {
                let connected = await harness.gateway.device(address)?.state == .connected
                return connected && sink.clocks.withLock(\.count) >= 2
            }
            let statistics = try await harness.simulated.statistics(address)
            #expect(statistics["health_records_stored"] == .uint32(0), "the cuff forgot every reading it sent")
            let readings = sink.of(0x2A35)
            #expect(readings.count == 3, "\(readings.count) of the 3 stored readings reached the sink")
            #expect(Set(readings.map(\.bytes)).count == readings.count)
            #expect(readings.allSatisfy { $0.link == readings.first?.link }, "all sent on the connection that failed")
        }
    }

    /// Without a sink the gateway does not serve health: the cuff is unsupported and let go, never connected and
    /// its readings dropped.
    @Test(.timeLimit(.minutes(2)))
    func withoutASinkACuffIsUnsupported() async throws {
        var simulator = GatewayHarness.configuration(devices: 1)
        simulator.devices[0].health = HealthDeviceSettings(kind: .bloodPressure)
        try await GatewayHarness.with(simulator: simulator) { harness in
            let address = GatewayHarness.address(1)
            _ = try await harness.gateway.pair(address: address, delegate: RejectingDelegate())
            try await waitUntil("the cuff is reported unsupported") {
                await harness.gateway.device(address)?.lastError?.contains("unsupported device") == true
            }
            let peripheral = try #require(try harness.storage.peripherals.peripheral(identityAddress: address))
            #expect(!peripheral.kinds.contains(.health))
            #expect(peripheral.unsupportedServices?.contains("00001810-0000-1000-8000-00805f9b34fb") == true)
        }
    }

    /// A health device has no Tether device record, so its pairing lives only in the peripheral registry
    /// (`adoptedAt`, migration v7): a gateway started again on the same database wants it and links it without
    /// being told, and once forgotten, a gateway started after that leaves it alone. (A 500-kill run once found a
    /// device paired but never served: the pairing had not outlived the daemon.)
    @Test(.timeLimit(.minutes(2)))
    func anAdoptedHealthDeviceOutlivesARestartAndAForgottenOneDoesNot() async throws {
        var simulator = GatewayHarness.configuration(devices: 1)
        simulator.devices[0].health = HealthDeviceSettings(kind: .thermometer)
        let address = GatewayHarness.address(1)
        try await SimulatedBlueZ.with(simulator) { simulated in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-adopted-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            func gateway() async throws -> (GatewayHarness, RecordingHealthSink) {
                let sink = RecordingHealthSink()
                var configuration = GatewayHarness.gatewayConfiguration()
                configuration.health = sink
                return (try await GatewayHarness.start(simulated: simulated, directory: directory, configuration: configuration), sink)
            }
            func linked(_ harness: GatewayHarness, _ sink: RecordingHealthSink, _ which: String) async throws {
                do {
                    // Connected, as `tether devices` shows it: a device without a Tether link is connected once its
                    // sessions are set up (it has no handshake to wait for).
                    try await waitUntil("the thermometer linked to the \(which) gateway", seconds: 30) {
                        await harness.gateway.device(address)?.state == .connected && !sink.clocks.withLock(\.isEmpty)
                    }
                } catch {
                    let device = await harness.gateway.device(address)
                    Issue.record("\(which) gateway: \(String(describing: device))")
                    throw error
                }
            }

            let (first, firstSink) = try await gateway()
            _ = try await first.gateway.pair(address: address, delegate: RejectingDelegate())
            try await linked(first, firstSink, "first")
            await first.stop()

            let (second, secondSink) = try await gateway()
            try await linked(second, secondSink, "second")
            #expect(await second.gateway.device(address)?.paired == true)
            try await second.gateway.forget(address)
            await second.stop()

            let (third, _) = try await gateway()
            try await Task.sleep(for: .seconds(2))  // what a wrongly wanted device would need to be connected
            #expect(await third.gateway.device(address)?.state != .connected)
            #expect(try await third.simulated.statistics(address)["connected"] == .bool(false))
            #expect(try third.storage.peripherals.adoptedAddresses().isEmpty)
            await third.stop()
        }
    }
}
