@testable import BlueZSimulator
import DBus
import Foundation
import HealthDeviceModel
import Testing
import TetherTestSupport

/// `tether health devices|samples|watch|backfill` against the real tetherd with tether-sim's blood-pressure cuff on
/// a private bus: what a technician sees.
@Suite("tether health against the real tetherd", .serialized, .timeLimit(.minutes(8)))
struct HealthDaemonCommandTests {
    static let cuff = "C0:54:45:00:10:01"

    /// A cuff whose first stored reading failed (NaN, BLS v1.1.1: all three pressures) and whose second did not.
    static func cuffDevice() -> DeviceConfiguration {
        var device = DeviceConfiguration(address: cuff)
        device.name = "Cuff-E2E"
        var health = HealthDeviceSettings(kind: .bloodPressure)
        health.storedRecords = 2
        health.faults.specialValues = [SpecialValueFault(measurement: 1, value: .nan)]
        device.health = health
        return device
    }

    @Test("devices, samples (a NaN shows as NAN), watch (intermediates live, one line each), backfill refused on a cuff")
    func aCuffThroughTheCLI() async throws {
        let system = try await TetherdSystem.start(devices: [Self.cuffDevice()])
        var watcher: BackgroundProcess?
        do {
            let paired = try await system.tether(["pair", Self.cuff])
            #expect(paired.status == 0, "\(paired.standardError)\n\(system.log("tetherd.log"))")
            let stored = try await system.eventually {
                let samples = (try? await system.json(["health", "samples", Self.cuff])) as? [[String: Any]] ?? []
                return samples.count { $0["metric"] as? String == "blood_pressure_systolic" } == 2
            }
            #expect(stored, "\(system.log("tetherd.log"))")

            let table = try await system.tether(["health", "samples", Self.cuff])
            #expect(table.status == 0, "\(table.standardError)")
            #expect(table.lines.first?.hasPrefix("TIME (UTC)") == true)
            let failed = table.lines.filter { $0.contains("blood_pressure_systolic") && $0.contains("NAN") }
            #expect(failed.count == 1, "\(table.standardOutput)")
            #expect(!table.standardOutput.contains("2047"), "a NaN is never a number")

            let limited = try await system.json(["health", "samples", Self.cuff, "--limit", "3"]) as? [[String: Any]]
            #expect(limited?.count == 3)
            let badSince = try await system.tether(["health", "samples", Self.cuff, "--since", "yesterday"])
            #expect(badSince.status == 2)
            #expect(badSince.standardError.contains("--since"))

            let devices = try #require(try await system.json(["health", "devices"]) as? [[String: Any]])
            let device = try #require(devices.first { $0["address"] as? String == Self.cuff })
            #expect(device["services"] as? [String] == ["blood-pressure"])
            // tether-sim's Device Information PnP ID (HealthGattLayout): Bluetooth SIG 0xFFFF, product 2, v1.0.0.
            #expect(device["pnp_id"] as? String == "bluetooth-sig:0xffff/0x0002 v1.0.0")
            #expect(device["connected"] as? Bool == true)
            let devicesTable = try await system.tether(["health", "devices"])
            #expect(devicesTable.lines.count == 2 && devicesTable.lines[1].contains("blood-pressure"), "\(devicesTable.standardOutput)")

            // watch: subscribed before the measurement; each reading one JSON line, the intermediate cuff pressures
            // (BLS §3.2, notified while the cuff inflates) included.
            let process = try BackgroundProcess(
                try BuiltProducts.require("tether"), ["health", "watch", Self.cuff, "--json", "--bus", system.bus.address],
                log: system.directory + "/watch.log")
            watcher = process
            // It says so on stderr (the same log here) once subscribed: the measurement comes after that.
            _ = try await process.waitForLine(startingWith: "Watching", timeout: .seconds(60))
            let simulated = try #require(await system.simulator.device(at: DBusObjectPath("/org/bluez/hci0/dev_C0_54_45_00_10_01")))
            #expect(await simulated.takeHealthMeasurement(user: nil))
            // The reading itself is indicated on another subscription and may come before or after the pressures;
            // keys are sorted, so the first intermediate (BLS §3.2: 20 mmHg) is the line that starts like this.
            let line = try await process.waitForLine(
                startingWith: "{\"address\":\"\(Self.cuff)\",\"canonical_unit\":\"mm[Hg]\",\"canonical_value\":\"20\",\"characteristic\":\"2A36\"",
                timeout: .seconds(60))
            let first = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(first["characteristic"] as? String == "2A36" && first["intermediate"] as? Bool == true, "\(line)")
            #expect(first["value"] as? String == "20" && first["unit"] as? String == "mm[Hg]")

            let backfill = try await system.tether(["health", "backfill", Self.cuff])
            #expect(backfill.status == 1, "\(backfill.standardOutput)")
            #expect(backfill.standardError.contains("Record Access Control Point"), "\(backfill.standardError)")
        } catch {
            watcher?.kill()
            await system.stop()
            throw error
        }
        watcher?.kill()
        await system.stop()
    }
}
