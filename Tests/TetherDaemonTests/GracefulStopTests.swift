import BlueZSimulator
import DBus
import Foundation
import GRDB
import LinkProtocol
import Synchronization
import Testing
import TetherStore
import TetherTestSupport

/// SIGTERM the real tetherd while simulated devices stream events: afterwards every event a device forgot (it
/// heard the ACK) is in the database exactly once — nothing was ACKed before its commit — and once tetherd runs
/// again, every event the devices recorded arrives, none twice.
@Suite(.serialized) struct GracefulStopTests {
    static let addresses = ["C0:54:45:00:00:01", "C0:54:45:00:00:02", "C0:54:45:00:00:03"]
    static let serials = ["TS00000001", "TS00000002", "TS00000003"]

    /// Stored (boot, sequence) pairs per serial, read straight from the database file.
    static func storedEvents(_ path: String) throws -> [String: [String]] {
        let queue = try DatabaseQueue(path: path)
        return try queue.read { db in
            var events: [String: [String]] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT device.serial AS serial, consumptionEvent.bootCounter AS boot, consumptionEvent.sequence AS sequence
                FROM consumptionEvent JOIN device ON device.id = consumptionEvent.deviceId
                """)
            {
                events[row["serial"], default: []].append("\(row["boot"] as Int64)/\(row["sequence"] as Int64)")
            }
            return events
        }
    }

    @Test func sigtermWhileDevicesStreamLosesNothing() async throws {
        try await DaemonTestBed.with([.justWorks, .justWorks, .justWorks]) { bed in
            let daemon = try await bed.startDaemon()
            for address in Self.addresses { _ = try await bed.pair(address) }
            try await bed.waitUntilConnected(Self.serials)

            // The devices stream: each takes hits in small bursts until told to stop.
            let streaming = Atomic<Bool>(true)
            let recorded = Mutex<[String: Int]>([:])
            let devices = try await Self.addresses.asyncMap { try await bed.device($0) }
            let streamers = Task {
                while streaming.load(ordering: .relaxed) {
                    for (index, address) in Self.addresses.enumerated() {
                        let count = (try? await bed.recordHits(address, 3)) ?? 0
                        recorded.withLock { $0[Self.serials[index], default: 0] += count }
                    }
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            try await waitUntil("events committed while streaming", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                (try await bed.client.status()["events_stored"]?.uint64Value ?? 0) >= 60
            }

            // SIGTERM with data in flight; the devices keep recording during the shutdown.
            daemon.signal(SIGTERM)
            let status = try await daemon.waitForExit(timeout: .seconds(90))
            streaming.store(false, ordering: .relaxed)
            await streamers.value
            #expect(status == 0, "tetherd log:\n\(daemon.logText)")
            #expect(daemon.logText.contains("stopped"))
            // The devices were disconnected on the way out (BlueZ keeps links of a client that just vanishes).
            for address in Self.addresses {
                #expect(try await bed.statistics(address)["connected"]?.boolValue == false, "\(address) still connected")
            }

            // Every event a device released (it heard the ACK) is in the database, exactly once.
            let stored = try Self.storedEvents(bed.databasePath)
            var releasedTotal = 0
            for (index, device) in devices.enumerated() {
                let serial = Self.serials[index]
                let rows = stored[serial] ?? []
                #expect(Set(rows).count == rows.count, "duplicate rows for \(serial)")
                let released = await device.releasedEvents.map { "\($0.bootCounter)/\($0.eventSequence)" }
                releasedTotal += released.count
                let missing = Set(released).subtracting(rows)
                #expect(missing.isEmpty, "\(serial): ACKed but not stored: \(missing.sorted().prefix(10))")
            }
            #expect(releasedTotal > 0)
            // Data was in flight: the devices still hold events recorded before or during the shutdown.
            var heldByDevices = 0
            for device in devices { heldByDevices += await device.unacknowledgedEvents }
            #expect(heldByDevices > 0)

            // tetherd again: the devices reconnect (paired in the registry) and deliver what they still hold.
            try await bed.startDaemon()
            try await waitUntil("every device to hand over every event", seconds: 120, every: .milliseconds(100), retryingErrors: true) {
                for device in devices where await device.unacknowledgedEvents > 0 { return false }
                return true
            }
            try await bed.stopDaemon()

            let final = try Self.storedEvents(bed.databasePath)
            let counts = recorded.withLock { $0 }
            for (index, device) in devices.enumerated() {
                let serial = Self.serials[index]
                let rows = final[serial] ?? []
                #expect(Set(rows).count == rows.count, "duplicate rows for \(serial)")
                #expect(rows.count == counts[serial], "\(serial): \(rows.count) stored, \(counts[serial] ?? 0) recorded")
                let released = Set(await device.releasedEvents.map { "\($0.bootCounter)/\($0.eventSequence)" })
                #expect(released == Set(rows), "\(serial): released and stored differ")
            }
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
