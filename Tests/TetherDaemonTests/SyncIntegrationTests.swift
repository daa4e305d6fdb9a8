import DBus
import Foundation
import Synchronization
import Testing
import TetherServer
import TetherSyncTesting
import TetherTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// tetherd with a backend: events from a simulated device reach tether-server (SQLite, in this process) through
/// the daemon's sync service; `SyncNow`, the `SyncFinished` signal and the status report it; the token never
/// appears in the log.
@Suite(.serialized) struct SyncIntegrationTests {
    @Test func eventsReachTheBackendAndSyncIsReported() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            let server = try await TestServer.start(storage: try await ServerBackend.sqlite.freshStorage(in: bed.directory.file("server")))
            do {
                let token = try await server.token(tenant: "home", gateway: "gw-1")
                let tokenFile = try bed.directory.write("sync.token", token + "\n", mode: 0o600)
                let daemon = try await bed.startDaemon(extra: """
                    [sync]
                    server_url = "\(server.baseURL)"
                    token_file = "\(tokenFile)"
                    interval = "1h"
                    """)
                let finished = try await bed.connection.signals(matching: DBusMatchRule(
                    interface: "io.tether.Gateway1", member: "SyncFinished", path: "/io/tether/Gateway"))

                _ = try await bed.pair(DaemonTestBed.justWorks)
                try await bed.waitUntilConnected(["TS00000001"])
                #expect(try await bed.recordHits(DaemonTestBed.justWorks, 12) == 12)
                try await waitUntil("12 events stored", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                    (try await bed.client.status()["events_stored"]?.uint64Value ?? 0) >= 12
                }

                _ = try await bed.client.call("SyncNow", timeout: .seconds(60))
                let status = try await bed.client.status()
                #expect(status["last_sync_result"]?.stringValue == "ok", "\(status)")
                #expect(status["last_sync_at"]?.int64Value != nil)
                // New events also trigger syncs by themselves; wait for the backend to hold all twelve.
                try await waitUntil("the backend to hold every event", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                    try await server.store.statistics(tenant: "home").events == 12
                }
                try await waitUntil("the outbox to drain", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                    try await bed.client.status()["outbox_pending"]?.uint32Value == 0
                }

                let next = try await within(.seconds(60), "a SyncFinished signal") { await finished.first { _ in true } }
                let signal = try #require(next)
                let summary = try #require(signal.arguments.first?.variantDictionaryValue)
                // The backend is up and accepts everything: a sync that failed here is a bug, not an outcome.
                #expect(summary["result"]?.stringValue == "ok", "\(summary)")
                #expect(summary["pushed"]?.uint32Value != nil, "\(summary)")

                try await bed.stopDaemon()
                #expect(!daemon.logText.contains(token), "the token appears in tetherd's log")
                #expect(daemon.logText.contains("sync finished"))
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        }
    }
}
