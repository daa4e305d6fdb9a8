import BlueZSimulator
import BlueZTestSupport
import DBus
import Foundation
import Glibc
import TetherGateway
import Testing

/// Many connect/disconnect cycles and bluetoothd restarts against one running gateway: afterwards no descriptor
/// is leaked, memory has not grown beyond a bound, no task is left over, and every event is stored once.
@Suite(.serialized)
struct GatewaySoakTests {
    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return -1 }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return -1 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test func cyclesAndRestartsLeakNothing() async throws {
        let count = 3
        try await GatewayHarness.with(simulator: GatewayHarness.configuration(devices: count, seed: 5)) { harness in
            let gateway = harness.gateway
            let simulated = harness.simulated
            try await harness.pairAll(count)
            var recorded = [Int](repeating: 0, count: count + 1)

            /// Drops every link (or restarts bluetoothd) and waits until every device has a new link up.
            func cycle(restart: Bool) async throws {
                let before = await gateway.devices().map(\.linksEstablished)
                if restart {
                    try await simulated.inject("bluetoothd-restart", ["downtime_ms": .uint32(100)])
                } else {
                    try await simulated.inject("disconnect")
                }
                try await waitUntil("every device linked again", seconds: 30) {
                    let devices = await gateway.devices()
                    return devices.count == count
                        && zip(devices, before).allSatisfy { $0.linksEstablished > $1 && $0.state == .connected }
                }
                for number in 1...count {
                    recorded[number] += try await simulated.recordHits(GatewayHarness.address(number), 3)
                }
            }

            func quiet() async throws {
                try await waitUntil("no BlueZ call or link set-up outstanding") {
                    let work = await gateway.outstandingWork()
                    return work.linkSetups == 0 && work.bluezCalls == 0
                }
            }

            // Warm up (first allocations, caches), then take the baseline in the same state: all linked, quiet.
            try await cycle(restart: false)
            try await cycle(restart: true)
            try await quiet()
            let baselineDescriptors = Self.openDescriptors()
            let baselineMemory = Self.residentBytes()

            for round in 1...30 { try await cycle(restart: round % 10 == 0) }
            try await quiet()

            // Same state as the baseline (every device linked once): the same descriptors are open. A link's
            // sockets close asynchronously, so wait (bounded) rather than read once.
            try await waitUntil("descriptors back to \(baselineDescriptors)") {
                Self.openDescriptors() <= baselineDescriptors
            }
            let growth = Self.residentBytes() - baselineMemory
            #expect(growth < 24 << 20, "resident memory grew by \(growth) bytes over 30 cycles")
            #expect(simulated.simulator.connection.objectServer.sendersWithPendingCalls == 0)
            for number in 1...count {
                let serial = GatewayHarness.serial(number)
                try await waitUntil("\(serial) complete") { try harness.storedEvents(serial: serial) == recorded[number] }
            }
            let devices = await gateway.devices()
            #expect(devices.allSatisfy { $0.linksEstablished >= 32 })
        }
    }

    @Test func stoppedGatewaysLeaveNoDescriptorsOrTasks() async throws {
        try await SimulatedBlueZ.with(GatewayHarness.configuration(devices: 2)) { simulated in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-soak-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            var baseline: Int?
            for round in 0..<8 {
                let harness = try await GatewayHarness.start(
                    simulated: simulated, directory: directory, configuration: GatewayHarness.gatewayConfiguration(),
                    databaseName: "soak-\(round).sqlite")
                for number in 1...2 {
                    // Round 0 pairs (BlueZ learns the devices); later gateways adopt the bonded devices.
                    if round == 0 {
                        _ = try await harness.gateway.pair(address: GatewayHarness.address(number), delegate: RejectingDelegate())
                    } else {
                        try await harness.gateway.adopt(address: GatewayHarness.address(number))
                    }
                }
                try await waitUntil("both linked") {
                    await harness.gateway.devices().allSatisfy { $0.state == .connected && $0.serial != nil }
                }
                await harness.stop()
                let left = await harness.gateway.outstandingWork()
                #expect(left.sessions == 0 && left.linkSetups == 0 && left.bluezCalls == 0)
                // Each stopped gateway closed its connection, database, sockets: the count returns to the first.
                if let baseline {
                    try await waitUntil("descriptors back to \(baseline) after round \(round)") {
                        Self.openDescriptors() <= baseline
                    }
                } else {
                    try await Task.sleep(for: .milliseconds(200))
                    baseline = Self.openDescriptors()
                }
            }
        }
    }
}
