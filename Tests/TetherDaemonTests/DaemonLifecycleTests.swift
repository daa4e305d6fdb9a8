import DBus
import Foundation
import Testing
import TetherTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The daemon's edges as systemd and Prometheus see them: the notify protocol from a real tetherd process, the
/// metrics and health endpoint over real HTTP.
@Suite(.serialized) struct DaemonLifecycleTests {
    /// Read continuously (`record`): between separate waits a loaded machine can leave the socket unread for the five
    /// seconds a ping every half second takes to fill its ten-datagram queue, and the daemon then rightly drops what
    /// it sends next; a CI run beside a soak lost STOPPING=1 so.
    @Test func tellsSystemdReadyWatchdogAndStopping() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            let socket = try NotifySocket(abstract: true, directory: bed.directory)
            let recording = socket.record()
            defer { recording.stop() }
            let daemon = try await bed.startDaemon(environment: ["NOTIFY_SOCKET": socket.name, "WATCHDOG_USEC": "1000000"])
            try await waitUntil("READY=1 on the notify socket", seconds: 60, every: .milliseconds(50)) { recording.saw("READY=1") }
            let ready = recording.all.first { $0.split(separator: "\n").contains("READY=1") }
            #expect(ready?.contains("STATUS=running") == true, "\(recording.all)")
            // Pings after READY=1, and again: it keeps pinging.
            try await waitUntil("two pings after READY=1", seconds: 60, every: .milliseconds(50)) {
                recording.all.drop { !$0.split(separator: "\n").contains("READY=1") }.filter { $0 == "WATCHDOG=1" }.count >= 2
            }
            daemon.signal(SIGTERM)
            try await waitUntil("STOPPING=1 on the notify socket", seconds: 60, every: .milliseconds(50)) { recording.saw("STOPPING=1") }
            #expect(try await daemon.waitForExit() == 0)
        }
    }

    /// A notify socket nobody reads fills after ten datagrams (net.unix.max_dgram_qlen). A blocking send there
    /// parked the watchdog loop and the store sampler on both cooperative threads, and the control API stopped
    /// answering (a CI failure). Sends must drop instead: the daemon keeps answering, READY=1 went first, and the
    /// pings resume once the socket is read.
    @Test func aNotifySocketNobodyReadsDoesNotWedgeTheDaemon() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            let socket = try NotifySocket(abstract: true, directory: bed.directory)
            // A ping every 50 ms fills the queue within a second; the store sampler adds a STATUS= every 5 s.
            let daemon = try await bed.startDaemon(environment: ["NOTIFY_SOCKET": socket.name, "WATCHDOG_USEC": "100000"])
            try await Task.sleep(for: .seconds(12))
            let status = try await bed.client.call("GetStatus", [], timeout: .seconds(20))
            #expect(status.first?.variantDictionaryValue?["version"] != nil)
            let queued = try await socket.waitFor("READY=1")
            #expect(!queued.contains { $0.contains("WATCHDOG=1") }, "a ping went before READY=1: \(queued)")
            // Read from now on without pause (a ping every 50 ms refills the queue in half a second): the pings flow
            // again, and STOPPING=1 gets through.
            let recording = socket.record()
            defer { recording.stop() }
            try await waitUntil("pings after the queue was read", seconds: 20, every: .milliseconds(50)) {
                recording.all.dropFirst(12).contains { $0 == "WATCHDOG=1" }
            }
            daemon.signal(SIGTERM)
            try await waitUntil("STOPPING=1 on the notify socket", seconds: 60, every: .milliseconds(50)) { recording.saw("STOPPING=1") }
            #expect(try await daemon.waitForExit() == 0)
            #expect(daemon.logText.contains("watchdog ping failed"), "the dropped pings were not reported:\n\(daemon.logText)")
        }
    }

    /// A free loopback port: bound, read and released (the daemon binds it right after).
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length)
                return getsockname(descriptor, pointer, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func get(_ url: String) async throws -> (status: Int, body: String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    @Test func metricsAndHealthOverHTTP() async throws {
        try await DaemonTestBed.with([.justWorks]) { bed in
            let port = try Self.freePort()
            try await bed.startDaemon(extra: "[metrics]\nlisten = \"127.0.0.1:\(port)\"")
            _ = try await bed.pair(DaemonTestBed.justWorks)
            try await bed.waitUntilConnected(["TS00000001"])
            #expect(try await bed.recordHits(DaemonTestBed.justWorks, 5) == 5)
            try await waitUntil("events stored and sampled", seconds: 60, every: .milliseconds(100), retryingErrors: true) {
                let metrics = try await Self.get("http://127.0.0.1:\(port)/metrics").body
                return metrics.contains("tether_events_stored 5")
            }
            let (status, metrics) = try await Self.get("http://127.0.0.1:\(port)/metrics")
            #expect(status == 200)
            for name in [
                "tether_devices_connected 1", "tether_frames_received_total", "tether_ack_latency_seconds_count",
                "tether_outbox_commands{status=\"pending\"}", "tether_database_bytes", "tether_sqlite_heap_bytes", "tether_connection_attempts_total{result=\"connected\"}",
            ] {
                #expect(metrics.contains(name), "missing \(name) in:\n\(metrics)")
            }
            let health = try await Self.get("http://127.0.0.1:\(port)/health")
            #expect(health.status == 200)
            #expect(health.body.contains("\"status\":\"ok\""))
            try await bed.stopDaemon()
        }
    }
}
