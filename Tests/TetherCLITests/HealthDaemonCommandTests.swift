@testable import BlueZSimulator
import DBus
import Foundation
import HealthDeviceModel
import Testing
import TetherTestSupport

/// `tether health devices|samples|delete|correct|deletions|watch|backfill` against the real tetherd with tether-sim's blood-pressure cuff on
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

            // The change lane by hand: a filter by metric, a deletion and a correction by uid, the tombstones listed.
            let pulses = try #require(try await system.json(["health", "samples", "--metric", "pulse_rate_non_invasive"]) as? [[String: Any]])
            #expect(!pulses.isEmpty && pulses.allSatisfy { $0["metric"] as? String == "pulse_rate_non_invasive" }, "\(pulses)")
            let badMetric = try await system.tether(["health", "samples", "--metric", "blood_sugar"])
            #expect(badMetric.status == 2 && badMetric.standardError.contains("blood_sugar"), "\(badMetric.standardError)")
            let numbers = pulses.filter { $0["status"] as? String == "number" }
            let (doomed, wrong) = (try #require(numbers.first?["uid"] as? String), try #require(numbers.last?["uid"] as? String))
            #expect(doomed != wrong, "\(numbers)")
            let deleted = try await system.tether(["health", "delete", doomed, "--note", "test measurement"])
            #expect(deleted.status == 0 && deleted.standardOutput.hasPrefix("Deleted \(doomed)"), "\(deleted.standardOutput)\(deleted.standardError)")
            let again = try await system.tether(["health", "delete", doomed])
            #expect(again.status == 1 && again.standardError.contains("already deleted"), "\(again.standardError)")
            let unknown = try await system.tether(["health", "delete", "0190c4d2-0000-7000-8000-000000000000"])
            #expect(unknown.status == 5, "\(unknown.standardError)")
            let noChange = try await system.tether(["health", "correct", wrong])
            #expect(noChange.status == 2, "\(noChange.standardError)")
            let corrected = try #require(try await system.json(["health", "correct", wrong, "--value", "61", "--json"]) as? [String: Any])
            let replacement = try #require(corrected["replacement_uid"] as? String)
            let now = try #require(try await system.json(["health", "samples", Self.cuff, "--metric", "pulse_rate_non_invasive"]) as? [[String: Any]])
            #expect(!now.contains { [doomed, wrong].contains($0["uid"] as? String) })
            #expect(now.first { $0["uid"] as? String == replacement }?["value"] as? String == "61", "\(now)")
            let withDeleted = try #require(try await system.json(["health", "samples", Self.cuff, "--include-deleted"]) as? [[String: Any]])
            #expect(withDeleted.contains { $0["uid"] as? String == doomed && $0["deleted_at"] != nil })
            let tombstones = try await system.tether(["health", "deletions", Self.cuff])
            #expect(tombstones.lines.first?.hasPrefix("REQUESTED (UTC)") == true && tombstones.lines.count == 3, "\(tombstones.standardOutput)")
            #expect(tombstones.standardOutput.contains("test measurement") && tombstones.standardOutput.contains(replacement))

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
