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
import TetherStore
import TetherTestSupport

/// Records what a health session hands over.
final class RecordingHealthSink: HealthValueSink {
    let values = Mutex<[HealthCharacteristicValue]>([])
    let endedLinks = Mutex<[UInt64]>([])

    let clocks = Mutex<[DeviceClockFacts]>([])

    func linkStarted(address: String, link: UInt64, clock: DeviceClockFacts) async { clocks.withLock { $0.append(clock) } }
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
}
