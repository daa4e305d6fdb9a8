import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The metrics and health endpoint: `GET /metrics` (Prometheus text format) and `GET /health` (200 with
/// `{"status":"ok"}`, or 503 with the problems), on a loopback address from `[metrics] listen`.
struct MetricsEndpoint: Service {
    let address: ListenAddress
    let metrics: DaemonMetrics
    let health: HealthState
    let logger: Logger
    /// Hears the port actually bound (tests listen on port 0).
    let onListening: @Sendable (Int) -> Void

    func run() async throws {
        let router = Router()
        let metrics = self.metrics
        let health = self.health
        router.get("/metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: metrics.exposition())))
        }
        router.get("/health") { _, _ -> Response in
            let verdict = health.verdict
            let body: [String: any Sendable] = ["status": verdict.healthy ? "ok" : "unhealthy", "problems": verdict.problems]
            let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
            return Response(
                status: verdict.healthy ? .ok : .serviceUnavailable,
                headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        }
        let onListening = self.onListening
        let logger = self.logger
        let address = self.address
        let application = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port), serverName: "tetherd"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? address.port
                logger.info("metrics endpoint listening", metadata: ["address": "\(address.host):\(port)"])
                onListening(port)
            },
            logger: logger)
        try await application.run()
    }
}
