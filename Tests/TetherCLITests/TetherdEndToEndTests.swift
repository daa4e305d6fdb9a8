@testable import BlueZSimulator
import DBus
import Foundation
import Testing

/// The `tether` CLI against the real tetherd (with tether-sim's BlueZ and tether-server) on a private bus: the
/// end-to-end checks issue 6 asks for. Nothing here is a stand-in: the daemon is the built `tetherd`.
@Suite("tether against the real tetherd", .serialized, .timeLimit(.minutes(8)))
struct TetherdEndToEndTests {
    static func device(_ number: Int, pairing: PairingMode, passkey: UInt32 = 123456) -> DeviceConfiguration {
        var device = DeviceConfiguration(address: String(format: "C0:54:45:00:10:%02X", number))
        device.name = String(format: "Tether-E2E-%d", number)
        device.serial = String(format: "TE%08d", number)
        device.pairing = pairing
        device.passkey = passkey
        device.firmware = .v1_4
        return device
    }

    @Test("pair a passkey device: a wrong passkey fails with exit 1, the right one (typed on stdin) pairs it")
    func pairPasskeyDevice() async throws {
        let system = try await TetherdSystem.start(devices: [Self.device(1, pairing: .passkey, passkey: 246_810)])
        do {
            let wrong = try await system.tether(["pair", "C0:54:45:00:10:01", "--passkey", "111111"])
            #expect(wrong.status == 1, "\(wrong.standardError)")
            #expect(wrong.standardError.hasPrefix("tether: "))
            #expect(!wrong.standardError.contains("Error Domain"))

            let paired = try await system.tether(["pair", "C0:54:45:00:10:01", "--json"], input: "246810\n")
            #expect(paired.status == 0, "\(paired.standardError)\n\(system.log("tetherd.log"))")
            #expect(paired.standardError.contains("Enter the 6-digit passkey shown on C0:54:45:00:10:01"))
            let record = try #require(try JSONSerialization.jsonObject(with: Data(paired.standardOutput.utf8)) as? [String: Any])
            #expect(record["address"] as? String == "C0:54:45:00:10:01")

            // tetherd keeps the paired device connected and learns its serial once it names itself.
            #expect(try await system.connected("TE00000001"), "\(system.log("tetherd.log"))")
            // The simulated device itself holds the bond.
            #expect(await system.simulator.devices[0].isPaired)
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }

    @Test("settings round trip: set through the CLI, the device reports it back; out of range exits 2 naming it")
    func settingsRoundTrip() async throws {
        let system = try await TetherdSystem.start(devices: [Self.device(2, pairing: .justWorks)])
        do {
            let paired = try await system.tether(["pair", "C0:54:45:00:10:02"])
            #expect(paired.status == 0, "\(paired.standardError)")
            let named = try await system.eventually {
                (try? await system.tether(["settings", "get", "TE00000002"]))?.status == 0
            }
            try #require(named, "\(system.log("tetherd.log"))")

            let set = try await system.tether(["settings", "set", "TE00000002", "led_brightness=40", "haptic_feedback=off"])
            #expect(set.status == 0, "\(set.standardError)")
            let applied = try await system.eventually {
                let settings = (try? await system.json(["settings", "get", "TE00000002"])) as? [String: Any] ?? [:]
                return settings["desired.led_brightness"] as? Int == 40 && settings["reported.led_brightness"] as? Int == 40
                    && settings["reported.haptic_feedback"] as? Bool == false
            }
            #expect(applied, "\(system.log("tetherd.log"))")

            let range = try await system.tether(["settings", "set", "TE00000002", "led_brightness=400"])
            #expect(range.status == 2)
            #expect(range.standardError.contains("led_brightness"), "\(range.standardError)")
            let unknown = try await system.tether(["settings", "get", "TE99999999"])
            #expect(unknown.status == 5, "\(unknown.standardError)")
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }

    @Test("dead-letter retry: the server refuses the first push, the CLI lists and retries the dead letters, and they arrive")
    func deadLetterRetry() async throws {
        let system = try await TetherdSystem.start(devices: [Self.device(3, pairing: .justWorks)], serverFaults: "422")
        do {
            let paired = try await system.tether(["pair", "C0:54:45:00:10:03"])
            #expect(paired.status == 0, "\(paired.standardError)")
            let connected = try await system.eventually {
                await system.simulator.devices[0].isConnected
            }
            try #require(connected)
            let recorded = await system.simulator.devices[0].recordHits(5)
            #expect(recorded == 5)

            var dead: [[String: Any]] = []
            let refused = try await system.eventually {
                dead = (try? await system.json(["dead-letters", "list"])) as? [[String: Any]] ?? []
                return !dead.isEmpty
            }
            try #require(refused, "no dead letter appeared: \(system.log("tetherd.log"))")
            let listed = try await system.tether(["dead-letters", "list"])
            // Every dead letter is listed by its id, as dead, with the backend's refusal as its last error.
            let ids = dead.compactMap { $0["id"] as? String }
            #expect(ids.count == dead.count)
            #expect(ids.allSatisfy { listed.standardOutput.contains($0) }, "\(listed.standardOutput)")
            #expect(dead.allSatisfy { $0["status"] as? String == "dead" }, "\(dead)")
            #expect(dead.allSatisfy { ($0["last_error"] as? String)?.contains("422") == true }, "\(dead)")

            let retry = try await system.tether(["dead-letters", "retry", "--all"])
            #expect(retry.status == 0, "\(retry.standardError)")
            #expect(retry.standardOutput == "requeued \(dead.count) dead letter\(dead.count == 1 ? "" : "s")\n")

            let delivered = try await system.eventually {
                let status = (try? await system.json(["status"])) as? [String: Any] ?? [:]
                let queue = ["outbox_pending", "outbox_in_flight", "outbox_failed", "outbox_dead"].map { status[$0] as? Int ?? -1 }
                return status["events_stored"] as? Int == 5 && queue == [0, 0, 0, 0] && ((try? system.eventsOnServer()) ?? 0) == 5
            }
            #expect(delivered, "\(system.log("tetherd.log"))")
            let empty = try await system.json(["dead-letters", "list"]) as? [Any]
            #expect(empty?.isEmpty == true)
        } catch {
            await system.stop()
            throw error
        }
        await system.stop()
    }
}
