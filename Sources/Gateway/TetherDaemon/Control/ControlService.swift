import DBus
import Logging
import ServiceLifecycle

/// The control API's lifetime: connect to the configured bus, export /io/tether/Gateway, own io.tether.Gateway,
/// and on shutdown release the name first (so clients see the daemon leave) and then disconnect.
final class ControlService: Service, Sendable {
    let bus: DBusBusAddress
    let makeControl: @Sendable (DBusConnection) -> GatewayControl
    let health: HealthState
    let logger: Logger
    let onReady: @Sendable (DBusConnection, ControlSignals) async -> Void
    let onStop: @Sendable () -> Void

    init(
        bus: DBusBusAddress, health: HealthState, logger: Logger,
        makeControl: @escaping @Sendable (DBusConnection) -> GatewayControl,
        onReady: @escaping @Sendable (DBusConnection, ControlSignals) async -> Void,
        onStop: @escaping @Sendable () -> Void
    ) {
        self.bus = bus
        self.health = health
        self.logger = logger
        self.makeControl = makeControl
        self.onReady = onReady
        self.onStop = onStop
    }

    func run() async throws {
        let connection = try await DBusConnection.connect(to: bus)
        do {
            let control = makeControl(connection)
            try await connection.objectServer.export([ControlInterface.make(control, connection: connection)], at: ControlInterface.path)
            let reply = try await connection.requestName(ControlInterface.busName, flags: [.doNotQueue])
            guard reply == .primaryOwner || reply == .alreadyOwner else {
                throw DaemonError("another process owns \(ControlInterface.busName) on the bus; is tetherd already running?")
            }
            health.setControl(ok: true, reason: nil)
            logger.info("control API ready", metadata: ["bus_name": "\(ControlInterface.busName)", "unique_name": "\(connection.uniqueName)"])
            await onReady(connection, ControlSignals(connection: connection))

            // Until shutdown, or until the bus goes away (which the daemon cannot serve without).
            await withTaskCancellationOrGracefulShutdownHandler {
                await connection.waitUntilDisconnected()
            } onCancelOrGracefulShutdown: { [onStop] in
                onStop()
                Task { _ = try? await connection.releaseName(ControlInterface.busName); await connection.close() }
            }
            health.setControl(ok: false, reason: "control API stopped")
            if !Task.isShuttingDownGracefully && !Task.isCancelled {
                throw DaemonError("lost the connection to the D-Bus bus")
            }
        } catch {
            health.setControl(ok: false, reason: "control API failed: \(error)")
            await connection.close()
            throw error
        }
    }
}
