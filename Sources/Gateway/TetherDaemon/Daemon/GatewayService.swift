import DBus
import ServiceLifecycle
import TetherGateway

/// Runs the gateway's device sessions in the group. The gateway shuts down gracefully when its task is
/// cancelled (TetherGateway: commits in flight finish and their ACKs are written, then every device is
/// disconnected), so a graceful shutdown of the group cancels it; then the BlueZ connection closes.
struct GatewayService: Service {
    let gateway: Gateway
    let connection: DBusConnection
    let notifications: DBusWireConnection?

    func run() async throws {
        defer {
            Task {
                await connection.close()
                await notifications?.close()
            }
        }
        try await cancelWhenGracefulShutdown { try await gateway.run() }
    }
}
