import BlueZSimulator
import DBus
import Foundation
import HealthDeviceModel
import Testing
@testable import TetherDaemon
import TetherServer
import TetherStore
import TetherSyncTesting
import TetherTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// tetherd with a backend and a health device (issue 15): the cuff's stored readings reach tether-server through the
/// daemon's sync, with no configuration beyond `[sync]`; the control API lists them uploaded and the metrics count
/// them.
@Suite(.serialized) struct HealthUploadDaemonTests {
    @Test(.timeLimit(.minutes(4)))
    func aCuffsReadingsReachTheBackend() async throws {
        var cuff = HealthDeviceSettings(kind: .bloodPressure)
        cuff.storedRecords = 2
        try await HealthControlTests.with([cuff]) { bed in
            let server = try await TestServer.start(storage: try await ServerBackend.sqlite.freshStorage(in: bed.directory.file("server")))
            do {
                let token = try await server.token(tenant: "home", gateway: "gw-1")
                let tokenFile = try bed.directory.write("sync.token", token + "\n", mode: 0o600)
                let port = try DaemonLifecycleTests.freePort()
                try await bed.startDaemon(extra: """
                    [sync]
                    server_url = "\(server.baseURL)"
                    token_file = "\(tokenFile)"
                    interval = "1h"

                    [metrics]
                    listen = "127.0.0.1:\(port)"
                    """)
                _ = try await bed.pair(HealthControlTests.cuff)
                // BLS v1.1.1 §3.1: the cuff indicates its two stored readings (systolic, diastolic, mean, pulse each).
                try await waitUntil("the cuff's readings stored", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                    try await HealthControlTests.samples(bed, HealthControlTests.cuff).count { $0["metric"]?.stringValue == "blood_pressure_systolic" } == 2
                }
                // The commit that stored them triggers a sync, and the sync uploads them.
                try await waitUntil("every stored sample uploaded", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                    let listed = try await HealthControlTests.samples(bed, HealthControlTests.cuff)
                    return !listed.isEmpty && listed.allSatisfy { $0["upload_state"]?.stringValue == "uploaded" }
                }
                let listed = try await HealthControlTests.samples(bed, HealthControlTests.cuff)
                let onServer = try await server.store.healthSamples(tenant: "home")
                #expect(Set(onServer.map(\.sample.uid)) == Set(listed.compactMap { $0["uid"]?.stringValue }))
                #expect(onServer.allSatisfy { $0.sample.device.address == HealthControlTests.cuff })
                #expect(listed.allSatisfy { $0["rejected_reason"] == nil })

                try await waitUntil("the metrics sampled the empty backlog", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                    let metrics = try await DaemonLifecycleTests.get("http://127.0.0.1:\(port)/metrics").body
                    return metrics.contains("tether_health_upload_rows{kind=\"samples\",state=\"pending\"} 0")
                        && metrics.contains("tether_health_upload_samples_total{result=\"applied\"} \(listed.count)")
                }
                try await bed.stopDaemon()
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        }
    }

    @Test(.timeLimit(.minutes(4)))
    func statusCountsWhatWaitsForTheBackend() async throws {
        var cuff = HealthDeviceSettings(kind: .bloodPressure)
        cuff.storedRecords = 2
        try await HealthControlTests.with([cuff]) { bed in
            // A backend nobody listens on: every upload fails, so every stored sample keeps waiting.
            let tokenFile = try bed.directory.write("sync.token", "tok_unused\n", mode: 0o600)
            try await bed.startDaemon(extra: """
                [sync]
                server_url = "http://127.0.0.1:\(try DaemonLifecycleTests.freePort())"
                token_file = "\(tokenFile)"
                interval = "1h"
                """)
            _ = try await bed.pair(HealthControlTests.cuff)
            try await waitUntil("the cuff's readings stored", seconds: 90, every: .milliseconds(100), retryingErrors: true) {
                try await HealthControlTests.samples(bed, HealthControlTests.cuff).count { $0["metric"]?.stringValue == "blood_pressure_systolic" } == 2
            }
            let stored = try await HealthControlTests.samples(bed, HealthControlTests.cuff).count
            let status = try await bed.client.status()
            #expect(stored > 0)
            #expect(status["health_samples_waiting"]?.uint32Value == UInt32(stored))
            #expect(status["health_samples_rejected"]?.uint32Value == 0)
            #expect(status["health_deletions_waiting"]?.uint32Value == 0)
            try await bed.stopDaemon()
        }
    }

    @Test("status counts pending, leased and failed rows as waiting; rejected and uploaded ones are not")
    func waitingRows() {
        let counts: [HealthUploadState: Int] = [.pending: 1, .leased: 2, .failed: 4, .rejected: 8, .uploaded: 16]
        #expect(ControlRecords.waiting(counts) == 7)
        #expect(ControlRecords.waiting([:]) == 0)
    }
}
